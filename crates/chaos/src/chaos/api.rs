//! The run's own requests to the api besides the load: the boards declared before it, and the
//! reads the checks make (bounded top reads, a closed period's standings).

use std::time::Duration;

use anyhow::Context;
use ledgerboard_core::model::BoardId;
use ledgerboard_harness::http;

use super::specs::SPECS;
use crate::stack::Stack;

pub(super) const REQUEST_LIMIT: Duration = Duration::from_secs(5);
/// How long a client keeps retrying a command whose outcome it does not know yet.
pub(super) const SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// A bounded read of the board's top, as JSON; None when it did not answer 200 within 1 s
/// (Redis coming back, sessions ended), an error when the api was never started. `board` is a
/// stored id: a period is read as a client reads it, `period=<id>` on its board; a board that
/// resets named without a period reads its current one. `params` are further query parameters
/// (`limit=1000`, `period=previous`), "" for none.
pub(super) async fn bounded_read(
    stack: &Stack,
    board: &BoardId,
    params: &str,
) -> anyhow::Result<Option<serde_json::Value>> {
    let (status, body) = get(
        stack,
        &format!("/v1/boards/{}/top", board.base()),
        board,
        params,
    )
    .await?;
    Ok(match status {
        Some(200) => serde_json::from_str(&body).ok(),
        _ => None,
    })
}

/// A GET of the api at `path` (1 s at most) with `board`'s period (if it is one) and `params`
/// as its query: the status (None when no answer came) and the body; an error when the api was
/// never started.
pub(super) async fn get(
    stack: &Stack,
    path: &str,
    board: &BoardId,
    params: &str,
) -> anyhow::Result<(Option<u16>, String)> {
    let mut query: Vec<String> = board
        .period()
        .map(|p| format!("period={p}"))
        .into_iter()
        .collect();
    if !params.is_empty() {
        query.push(params.to_owned());
    }
    let path = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    let headers = [("authorization", stack.bearer.as_str())];
    let addr = stack.api_addr()?;
    Ok(
        match http::request(
            addr,
            "GET",
            &path,
            &headers,
            String::new(),
            Duration::from_secs(1),
        )
        .await
        {
            Ok((status, body)) => (Some(status), body),
            Err(_) => (None, String::new()),
        },
    )
}

/// Declares the run's declared boards through the api (the run's token has the `admin`
/// scope), before any command: a board's rule cannot change once it has entries. The boards
/// that feed others come last: a board may only feed boards already declared.
pub(super) async fn declare(stack: &Stack) -> anyhow::Result<()> {
    let fed_first = SPECS
        .iter()
        .filter(|s| s.feeds.is_empty())
        .chain(SPECS.iter().filter(|s| !s.feeds.is_empty()));
    for spec in fed_first {
        let Some(body) = spec.declaration else {
            continue;
        };
        let headers = [("authorization", stack.bearer.as_str())];
        let path = format!("/v1/boards/{}", spec.name);
        let (status, answer) = http::request(
            stack.api_addr()?,
            "PUT",
            &path,
            &headers,
            body.to_owned(),
            REQUEST_LIMIT,
        )
        .await
        .with_context(|| format!("declaring {}", spec.name))?;
        anyhow::ensure!(
            status == 200 || status == 201,
            "declaring {} answered {status}: {answer}",
            spec.name
        );
        // The check computes a period's end from `period_secs`: it must be the reset declared.
        let declared: serde_json::Value = serde_json::from_str(&answer)?;
        // The checks fold and order by the spec: the api must have declared the same columns
        // and links.
        let orders: Vec<&str> = declared["columns"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["order"].as_str()).collect())
            .unwrap_or_default();
        let feeds: Vec<&str> = declared["feeds"]
            .as_array()
            .map(|f| f.iter().filter_map(|f| f.as_str()).collect())
            .unwrap_or_default();
        anyhow::ensure!(
            orders == spec.columns.iter().map(|o| o.as_str()).collect::<Vec<_>>()
                && feeds == spec.feeds
                && declared["tie_break"].as_str() == Some(spec.tie_break.as_str())
                && declared["max_score"].as_i64() == Some(spec.max_score),
            "{} was declared as {declared}, the run expects columns {:?}, feeds {:?}, tie break \
             {:?} and max score {}",
            spec.name,
            spec.columns,
            spec.feeds,
            spec.tie_break,
            spec.max_score
        );
        let reset = spec.period_secs.map(|n| format!("every {n}s"));
        anyhow::ensure!(
            declared["reset"].as_str() == Some(reset.as_deref().unwrap_or("never")),
            "{} was declared with reset {}, the run expects {reset:?}",
            spec.name,
            declared["reset"]
        );
    }
    Ok(())
}

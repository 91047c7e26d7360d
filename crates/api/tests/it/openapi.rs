//! The OpenAPI document and its rendered page.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};

async fn get(uri: &str) -> (StatusCode, String) {
    // The document needs no server: a pool that never connects is enough.
    let app = common::app_with(&common::Settings::default());
    common::send_text(
        &app,
        Request::get(uri).body(Body::empty()).expect("request"),
    )
    .await
}

#[tokio::test]
async fn the_document_covers_every_route_and_its_answers() {
    let (status, body) = get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doc: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{doc}"
    );
    let paths = doc["paths"].as_object().expect("paths");
    let mut names: Vec<&str> = paths.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "/v1/boards",
            "/v1/boards/{board}",
            "/v1/boards/{board}/attempts",
            "/v1/boards/{board}/live",
            "/v1/boards/{board}/periods/{period}/standings",
            "/v1/boards/{board}/periods/{period}/verification",
            "/v1/boards/{board}/reset",
            "/v1/boards/{board}/scores",
            "/v1/boards/{board}/top",
            "/v1/boards/{board}/users",
            "/v1/boards/{board}/users/{user_id}",
            "/v1/boards/{board}/users/{user_id}/around",
            "/v1/competitions",
            "/v1/competitions/{id}",
            "/v1/competitions/{id}/entries",
            "/v1/competitions/{id}/players/{user_id}",
            "/v1/competitions/{id}/results",
            "/v1/competitions/{id}/runs/{run}/close",
            "/v1/competitions/{id}/verification",
            "/v1/events",
            "/v1/moderation",
            "/v1/reviews",
            "/v1/reviews/{event_id}/approve",
            "/v1/reviews/{event_id}/reject",
            "/v1/webhooks",
            "/v1/webhooks/{id}",
            "/v1/webhooks/{id}/parked",
            "/v1/webhooks/{id}/parked/requeue"
        ]
    );
    let attempts = &paths["/v1/boards/{board}/attempts"]["post"]["responses"];
    for code in ["200", "201", "400", "401", "403", "409", "422", "503"] {
        assert!(attempts.get(code).is_some(), "POST attempts lacks {code}");
    }
    let moderation = &paths["/v1/moderation"]["post"]["responses"];
    for code in ["200", "201", "400", "401", "403", "409", "422", "503"] {
        assert!(
            moderation.get(code).is_some(),
            "POST moderation lacks {code}"
        );
    }
    let events = &paths["/v1/events"]["get"]["responses"];
    for code in ["200", "400", "401", "403", "410", "429", "503"] {
        assert!(events.get(code).is_some(), "GET events lacks {code}");
    }
    let post = &paths["/v1/boards/{board}/scores"]["post"]["responses"];
    for code in ["200", "201", "400", "409", "413", "422", "503"] {
        assert!(post.get(code).is_some(), "POST scores lacks {code}");
    }
    let top = &paths["/v1/boards/{board}/top"]["get"];
    let params: Vec<&str> = top["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in [
        "board",
        "limit",
        "offset",
        "after",
        "rank_mode",
        "consistency",
        "period",
    ] {
        assert!(params.contains(&p), "top lacks {p}: {params:?}");
    }
    let verification = &paths["/v1/boards/{board}/periods/{period}/verification"]["get"];
    for code in ["200", "401", "403", "404", "422", "503"] {
        assert!(
            verification["responses"].get(code).is_some(),
            "GET verification lacks {code}"
        );
    }
    let outcomes = &doc["components"]["schemas"]["Outcome"]["enum"];
    assert_eq!(
        outcomes,
        &serde_json::json!(["holds", "holds_with_explained_changes", "does_not_hold"]),
        "{}",
        doc["components"]["schemas"]["Outcome"]
    );
    let reset = &paths["/v1/boards/{board}/reset"]["post"]["responses"];
    for code in ["200", "401", "403", "422", "503"] {
        assert!(reset.get(code).is_some(), "POST reset lacks {code}");
    }
    let put = &paths["/v1/boards/{board}"]["put"]["responses"];
    for code in ["200", "201", "401", "403", "409", "422", "503"] {
        assert!(put.get(code).is_some(), "PUT boards lacks {code}");
    }
    let users = &paths["/v1/boards/{board}/users"]["get"]["parameters"];
    assert!(
        users.as_array().is_some_and(|p| p
            .iter()
            .any(|p| p["name"] == "ids" && p["required"] == true)),
        "{users}"
    );
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for s in [
        "CommandBody",
        "CommandOutcome",
        "ModerationBody",
        "ModerationOutcome",
        "Page",
        "Member",
        "Users",
        "RankedEntry",
        "Freshness",
        "ErrorBody",
        "DefinitionBody",
        "BoardDefinition",
        "BoardList",
        "ResetOutcome",
        "Standings",
        "Standing",
        "Submitted",
        "Column",
        "FedOutcome",
    ] {
        assert!(schemas.contains_key(s), "no schema {s}");
    }
    // Boards with columns (issue 37): a command's value is one integer, an array of them or an
    // object of them by column name; answers carry every column and each fed board's outcome.
    let kinds: Vec<&str> = schemas["Submitted"]["oneOf"]
        .as_array()
        .expect("Submitted is one of several shapes")
        .iter()
        .filter_map(|s| s["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["integer", "array", "object"],
        "{}",
        schemas["Submitted"]
    );
    for (schema, field) in [
        ("CommandOutcome", "scores"),
        ("CommandOutcome", "linked"),
        ("RankedEntry", "scores"),
        ("Member", "scores"),
        ("Standing", "scores"),
        ("DefinitionBody", "columns"),
        ("DefinitionBody", "feeds"),
        ("BoardDefinition", "columns"),
        ("BoardDefinition", "feeds"),
        ("ErrorDetail", "board"),
    ] {
        assert!(
            schemas[schema]["properties"].get(field).is_some(),
            "{schema} has no {field}: {}",
            schemas[schema]
        );
    }
}

#[tokio::test]
async fn the_docs_page_renders_it() {
    let (status, body) = get("/docs/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("swagger-ui"), "{body}");
    let (status, _) = get("/docs/swagger-ui.css").await;
    assert_eq!(status, StatusCode::OK, "assets are served from the binary");
}

/// The committed copy of the served document, from which the SDKs are generated (sdks/).
const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdks/openapi.json");

/// The document as it is committed: pretty-printed JSON, every object's keys sorted, a final
/// newline. So a diff of the file shows what changed in the API, not how it was printed.
fn normalise(served: &str) -> String {
    fn sorted(value: serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(
                    entries.into_iter().map(|(k, v)| (k, sorted(v))).collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.into_iter().map(sorted).collect())
            }
            other => other,
        }
    }
    let value: serde_json::Value = serde_json::from_str(served).expect("the document is JSON");
    let mut text = serde_json::to_string_pretty(&sorted(value)).expect("print JSON");
    text.push('\n');
    text
}

/// `sdks/openapi.json` is the document the api serves, byte for byte once normalised, and its
/// `info.version` is this release's. `LEDGERBOARD_WRITE_OPENAPI=1` writes the file instead
/// (`just openapi`, which then regenerates the SDKs' generated files from it).
#[tokio::test]
async fn the_committed_document_is_the_served_one() {
    let (status, body) = get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let served = normalise(&body);
    let doc: serde_json::Value = serde_json::from_str(&served).expect("JSON");
    assert_eq!(
        doc["info"]["version"],
        env!("CARGO_PKG_VERSION"),
        "info.version follows the workspace's version"
    );
    // OpenAPI requires unique operation ids, and openapi-typescript's `operations` type has
    // one member per id: two routes with the same one would not compile in the TypeScript SDK.
    let mut ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            if let Some(id) = op["operationId"].as_str()
                && let Some(other) = ids.insert(id.to_owned(), format!("{method} {path}"))
            {
                panic!("operationId {id} names both {other} and {method} {path}");
            }
        }
    }
    if std::env::var_os("LEDGERBOARD_WRITE_OPENAPI").is_some() {
        std::fs::write(COMMITTED, &served).expect("write sdks/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
    if committed != served {
        let line = committed
            .lines()
            .zip(served.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(served.lines().count()));
        panic!(
            "sdks/openapi.json is not the document the api serves (first difference at line {}: \
             committed {:?}, served {:?}).\nRegenerate it and the SDKs' generated files with \
             `just openapi` (or `LEDGERBOARD_WRITE_OPENAPI=1 cargo test -p ledgerboard-api \
             --test it openapi::` then `sdks/sdk.sh generate`), and commit the result.",
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            served.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}

//! Subscriptions: create, list, get (with each lane's progress, parked deliveries and gaps),
//! update, delete. What the api's `/v1/webhooks` routes and `lbctl webhook` call.

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use super::signature::generate_secret;
use super::{
    Change, Created, Detail, Gap, LaneStatus, MAX_LANES, MAX_PAGE, NewSubscription, Subscription,
    UrlRules, WebhookError, check_boards, check_kinds, check_secret, check_url,
};
use crate::db::{Database, Op, Statement, StoreError};

/// Parameters: id, url, kinds, boards, secret, lanes, enabled.
static CREATE: Statement<7> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/create.sql"),
    [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT,
        Type::INT4,
        Type::BOOL,
    ],
);
/// Parameters: after, limit.
static LIST: Statement<2> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/list.sql"),
    [Type::TEXT, Type::INT8],
);
static GET: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/get.sql"),
    [Type::TEXT],
);
/// Parameters: id, url, kinds, boards, enabled (NULL: unchanged).
static UPDATE: Statement<5> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/update.sql"),
    [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::BOOL,
    ],
);
static DELETE: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/delete.sql"),
    [Type::TEXT],
);
static DETAIL: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/detail.sql"),
    [Type::TEXT],
);
static LANES: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/lanes.sql"),
    [Type::TEXT],
);
static GAPS: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/gaps.sql"),
    [Type::TEXT],
);

fn from_row(row: &Row) -> Result<Subscription, StoreError> {
    Ok(Subscription {
        id: row.try_get("subscription_id")?,
        url: row.try_get("url")?,
        kinds: row.try_get("kinds")?,
        boards: row.try_get("boards")?,
        lanes: row.try_get("lanes")?,
        enabled: row.try_get("enabled")?,
        start_position: row.try_get("start_position")?,
        failures: row.try_get("failures")?,
        circuit: row.try_get("circuit")?,
        circuit_open_until: row.try_get("circuit_open_until")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// A subscription id: `wh_` and 24 random hex digits (from a v4 UUID).
fn new_id() -> String {
    format!("wh_{}", &uuid::Uuid::new_v4().simple().to_string()[..24])
}

/// Creates a subscription; its lanes start at the log's last position. The answer holds the
/// secret (generated unless given), which no later read shows.
pub async fn create(
    db: &Database,
    new: &NewSubscription,
    rules: UrlRules,
) -> Result<Created, WebhookError> {
    let url = check_url(&new.url, rules)?;
    let kinds = check_kinds(&new.kinds)?;
    let boards = check_boards(&new.boards)?;
    let lanes = new.lanes.unwrap_or(1);
    if !(1..=MAX_LANES).contains(&lanes) {
        return Err(WebhookError::InvalidLanes);
    }
    let secret = match &new.secret {
        Some(s) => {
            check_secret(s)?;
            s.clone()
        }
        None => generate_secret().map_err(|_| {
            StoreError::Internal("the system's random source failed to make a secret".into())
        })?,
    };
    let enabled = new.enabled.unwrap_or(true);
    let id = new_id();
    let row = db
        .query_one(
            &CREATE,
            [
                &id,
                &url.as_str(),
                &kinds,
                &boards,
                &secret,
                &lanes,
                &enabled,
            ],
        )
        .await?;
    Ok(Created {
        subscription: from_row(&row)?,
        secret,
    })
}

/// Subscriptions in id order after `after`, at most `limit` (1 to [`MAX_PAGE`]).
pub async fn list(
    db: &Database,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<Subscription>, WebhookError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let rows = db.query(&LIST, [&after.unwrap_or(""), &limit]).await?;
    Ok(rows.iter().map(from_row).collect::<Result<_, _>>()?)
}

/// One subscription with each lane's progress, its parked deliveries and retention's gaps.
pub async fn get(db: &Database, id: &str) -> Result<Detail, WebhookError> {
    let row = db.query_opt(&GET, [&id]).await?;
    let subscription = from_row(&row.ok_or(WebhookError::Unknown)?)?;
    let detail = db.query_one(&DETAIL, [&id]).await?;
    let lane_status = db
        .query(&LANES, [&id])
        .await?
        .iter()
        .map(|r| {
            Ok(LaneStatus {
                lane: r.try_get("lane")?,
                position: r.try_get("position")?,
                attempts: r.try_get("attempts")?,
                next_attempt_at: r.try_get("next_attempt_at")?,
                last_error: r.try_get("last_error")?,
                lease_holder: r.try_get("lease_holder")?,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    let gaps = db
        .query(&GAPS, [&id])
        .await?
        .iter()
        .map(|r| {
            Ok(Gap {
                lane: r.try_get("lane")?,
                after_position: r.try_get("after_position")?,
                through_position: r.try_get("through_position")?,
                recorded_at: r.try_get("recorded_at")?,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(Detail {
        subscription,
        head: detail.try_get("head")?,
        lane_status,
        parked: detail.try_get("parked")?,
        requeued: detail.try_get("requeued")?,
        gaps,
    })
}

/// Changes what `change` names; the rest stays.
pub async fn update(
    db: &Database,
    id: &str,
    change: &Change,
    rules: UrlRules,
) -> Result<Subscription, WebhookError> {
    let url = change
        .url
        .as_deref()
        .map(|u| check_url(u, rules).map(|u| u.to_string()))
        .transpose()?;
    let kinds = change.kinds.as_deref().map(check_kinds).transpose()?;
    let boards = change.boards.as_deref().map(check_boards).transpose()?;
    let row = db
        .query_opt(&UPDATE, [&id, &url, &kinds, &boards, &change.enabled])
        .await?;
    from_row(&row.ok_or(WebhookError::Unknown)?).map_err(WebhookError::from)
}

/// Deletes a subscription with its lanes, parked deliveries and gaps.
pub async fn delete(db: &Database, id: &str) -> Result<(), WebhookError> {
    match db.query_opt(&DELETE, [&id]).await? {
        Some(_) => Ok(()),
        None => Err(WebhookError::Unknown),
    }
}

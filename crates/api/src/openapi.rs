//! The OpenAPI document, generated from the handlers' annotations: served at `/openapi.json`
//! and rendered at `/docs` (Swagger UI, its assets built into the binary).

use utoipa::OpenApi;

use crate::routes::{commands, reads};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ledgerboard",
        description = "Leaderboards whose reads are cheap and say how fresh they are. PostgreSQL is the source of truth; Redis holds a repairable projection."
    ),
    paths(commands::post_score, reads::top, reads::user, reads::around),
    tags(
        (name = "commands", description = "idempotent score commands"),
        (name = "reads", description = "leaderboard reads with their freshness")
    )
)]
pub struct ApiDoc;

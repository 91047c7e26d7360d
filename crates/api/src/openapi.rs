//! The OpenAPI document, generated from the handlers' annotations: served at `/openapi.json`
//! and rendered at `/docs` (Swagger UI, its assets built into the binary).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    attempts, boards, commands, competition_runs, competitions, events, moderation, periods, reads,
    reviews, webhooks,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ledgerboard",
        // The release's version (the workspace's): sdks/openapi.json carries it, so the
        // committed document, and the SDKs generated from it, change with every release.
        version = env!("CARGO_PKG_VERSION"),
        description = "Leaderboards whose reads are cheap and say how fresh they are. PostgreSQL is the source of truth; Redis holds a repairable projection."
    ),
    paths(
        commands::post_score,
        reads::top,
        reads::users,
        reads::user,
        reads::around,
        crate::sse::route::live,
        boards::put_board,
        boards::get_board,
        boards::list_boards,
        boards::post_reset,
        periods::standings,
        periods::verification,
        moderation::post_moderation,
        attempts::post_attempt,
        reviews::list,
        reviews::approve,
        reviews::reject,
        competitions::put_competition,
        competitions::list,
        competitions::get_competition,
        competitions::post_entry,
        competitions::results,
        competition_runs::close,
        competition_runs::verification,
        competition_runs::player,
        events::list_events,
        webhooks::create,
        webhooks::list,
        webhooks::get_webhook,
        webhooks::update,
        webhooks::delete,
        webhooks::parked_list,
        webhooks::requeue
    ),
    // A live stream's events carry a LiveMessage as JSON text: listed so that clients get
    // its type (the stream's own schema is LiveEvent's).
    components(schemas(crate::live::render::LiveMessage)),
    modifiers(&BearerAuth),
    tags(
        (name = "commands", description = "idempotent score commands"),
        (name = "reads", description = "leaderboard reads with their freshness"),
        (name = "boards", description = "board definitions: operator, order, bounds, periods; manual resets"),
        (name = "periods", description = "closed periods' frozen standings, from PostgreSQL only (payouts)"),
        (name = "competitions", description = "tournaments, cohorts and leagues over a board that resets: runs, entries, caps, prizes, closes chained by digest"),
        (name = "moderation", description = "idempotent, audited removals, bans and erasures; the review queue of held scores (moderate scope)"),
        (name = "events", description = "the event log: every recorded score, period and run close, moderation and review decision, in order, paged by cursor or long-polled (events scope)"),
        (name = "webhooks", description = "signed webhook subscriptions to the event log, delivered by ledgerboard-dispatcher at least once, in order per board; their parked deliveries (admin scope)")
    )
)]
pub struct ApiDoc;

/// The `bearer` scheme: a token from `auth.tokens`, sent as `Authorization: Bearer <token>`;
/// the `player` scheme: a player token (a JWT the game's backend mints for one player,
/// verified with `auth.player_keys`), sent the same way.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "player",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A player token: a JWT (HS256, EdDSA or ES256, with a kid) the game's backend mints for one player; it posts that player's scores to boards whose write_policy is player",
                    ))
                    .build(),
            ),
        );
    }
}

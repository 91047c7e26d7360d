//! The core crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod abandoned;
mod citus_path;
mod claim_plan;
mod cluster;
mod columns;
mod command_groups;
mod commands;
mod common;
mod definitions;
mod entry_counts;
mod events;
mod events_decisions;
mod events_kinds;
mod functions;
mod generation;
mod history;
mod moderation_race;
mod periods;
mod player_tokens;
mod schema;
mod store;
mod tls;
mod verification;
mod wakeup;
mod webhook;

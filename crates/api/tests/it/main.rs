//! The api crate's integration tests: one binary (one link of the workspace), one module
//! per concern, fixtures shared through `common` and the testkit.

mod access;
mod board_columns;
mod board_orders;
mod boards;
mod coalesce;
mod commands;
mod common;
mod competitions;
mod console;
mod console_columns;
mod console_webhooks;
mod daemon;
mod events;
mod games;
mod hardening;
mod league_entries;
mod leagues;
mod live;
mod moderation;
mod openapi;
mod periods;
mod pgbouncer;
mod players;
mod players_guarded;
mod postgres_restart;
mod projection_truth;
mod readiness;
mod reads;
mod rolling_restart;
mod tls;
mod tokens;
mod webhooks;

//! `lbctl user ban|unban|erase`: moderate a user on every board.

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::board::moderation::Action;
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::UserId;

use crate::common;
use crate::moderation::{ModerationArgs, moderate};

#[derive(Subcommand)]
pub enum UserCommand {
    /// Hide the user from every read of every board (ranks close up); their scores are kept
    /// and their commands still applied, hidden.
    Ban {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
    /// Show a banned user's entries again, with the scores they hold.
    Unban {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
    /// Right to erasure: remove the user's entries, ban and metadata, give their events a
    /// random pseudonym, and have the projector remove every trace from Redis; reports what
    /// was removed.
    Erase {
        #[arg(long)]
        user: String,
        /// How long to wait for the projector to remove the user from Redis (0: do not wait).
        #[arg(long, default_value_t = 30)]
        wait_secs: u64,
        #[command(flatten)]
        moderation: ModerationArgs,
    },
}

pub async fn run(settings: &Settings, command: UserCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    let (action, args, wait_secs) = match command {
        UserCommand::Ban { user, moderation } => (
            Action::Ban {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            0,
        ),
        UserCommand::Unban { user, moderation } => (
            Action::Unban {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            0,
        ),
        UserCommand::Erase {
            user,
            wait_secs,
            moderation,
        } => (
            Action::Erase {
                user: UserId::parse(&user).context("--user")?,
            },
            moderation,
            wait_secs,
        ),
    };
    moderate(&db, action, args, wait_secs).await
}

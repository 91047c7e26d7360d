//! `lbctl webhook create|list|show|update|delete|parked|requeue`: webhook subscriptions and
//! their parked deliveries (core's `webhook/`, as the api's `/v1/webhooks` routes do).

use anyhow::Context;
use clap::Subcommand;
use ledgerboard_core::config::Settings;
use ledgerboard_core::webhook::{self, Change, NewSubscription, Subscription, UrlRules, parked};

use crate::common;

#[derive(Subcommand)]
pub enum WebhookCommand {
    /// Subscribe a receiver to the event log: it gets the events sequenced from now on, signed
    /// with a secret printed once (keep it with the receiver).
    Create {
        /// The receiver's https:// URL.
        #[arg(long)]
        url: String,
        /// Only these kinds (repeat, or comma-separated; default: every kind).
        #[arg(long = "kind", value_delimiter = ',')]
        kinds: Vec<String>,
        /// Only these boards (repeat, or comma-separated; default: every board).
        #[arg(long = "board", value_delimiter = ',')]
        boards: Vec<String>,
        /// The HMAC secret (16 to 256 printable characters; default: a generated one).
        #[arg(long)]
        secret: Option<String>,
        /// Deliveries in flight at once for this receiver, 1 to 64: each board's events go by
        /// one lane, in order. Fixed once created.
        #[arg(long, default_value_t = 1)]
        lanes: i32,
        /// Create it disabled (nothing delivered, retention not held back, until enabled).
        #[arg(long)]
        disabled: bool,
        /// Accept an http:// URL (a local receiver; the dispatcher needs
        /// dispatcher.allow_http too).
        #[arg(long)]
        allow_http: bool,
        /// Accept a URL naming a loopback, private or link-local address (a local receiver;
        /// the dispatcher needs dispatcher.allow_private_addresses too).
        #[arg(long)]
        allow_private_addresses: bool,
        #[arg(long)]
        json: bool,
    },
    /// Subscriptions in id order.
    List {
        #[arg(long)]
        after: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// One subscription: its lanes' progress, parked deliveries, retention's gaps.
    Show {
        #[arg(long)]
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a subscription's URL, kinds, boards, or enable or disable it. A new URL or an
    /// enabling resets its circuit and retries its lanes now.
    Update {
        #[arg(long)]
        id: String,
        #[arg(long)]
        url: Option<String>,
        /// Replace the kinds (comma-separated); --all-kinds for every kind.
        #[arg(long, value_delimiter = ',', conflicts_with = "all_kinds")]
        kinds: Option<Vec<String>>,
        #[arg(long)]
        all_kinds: bool,
        /// Replace the boards (comma-separated); --all-boards for every board.
        #[arg(long, value_delimiter = ',', conflicts_with = "all_boards")]
        boards: Option<Vec<String>>,
        #[arg(long)]
        all_boards: bool,
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
        #[arg(long)]
        allow_http: bool,
        #[arg(long)]
        allow_private_addresses: bool,
        #[arg(long)]
        json: bool,
    },
    /// Delete a subscription with its lanes and parked deliveries.
    Delete {
        #[arg(long)]
        id: String,
    },
    /// A subscription's parked deliveries (events it gave up on after
    /// dispatcher.max_attempts), oldest first, with their last error.
    Parked {
        #[arg(long)]
        id: String,
        /// Positions after this one.
        #[arg(long, default_value_t = 0)]
        after: i64,
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Deliver parked events once more (fix what made them fail first).
    Requeue {
        #[arg(long)]
        id: String,
        /// Every parked delivery of the subscription.
        #[arg(long, conflicts_with = "position")]
        all: bool,
        /// The parked deliveries at these positions.
        #[arg(long, num_args = 1..)]
        position: Vec<i64>,
    },
}

fn rules(allow_http: bool, allow_private_addresses: bool) -> UrlRules {
    UrlRules {
        allow_http,
        allow_private_addresses,
    }
}

fn line(s: &Subscription) -> String {
    let all = |v: &[String]| {
        if v.is_empty() {
            "*".to_owned()
        } else {
            v.join(",")
        }
    };
    format!(
        "{}\t{}\tkinds={}\tboards={}\tlanes={}\t{}\tcircuit={}\tfailures={}",
        s.id,
        s.url,
        all(&s.kinds),
        all(&s.boards),
        s.lanes,
        if s.enabled { "enabled" } else { "disabled" },
        s.circuit,
        s.failures
    )
}

pub async fn run(settings: &Settings, command: WebhookCommand) -> anyhow::Result<()> {
    let db = common::database(&settings.database).await?;
    match command {
        WebhookCommand::Create {
            url,
            kinds,
            boards,
            secret,
            lanes,
            disabled,
            allow_http,
            allow_private_addresses,
            json,
        } => {
            let new = NewSubscription {
                url,
                kinds,
                boards,
                secret,
                lanes: Some(lanes),
                enabled: Some(!disabled),
            };
            let created =
                webhook::create(&db, &new, rules(allow_http, allow_private_addresses)).await?;
            if json {
                println!("{}", serde_json::to_string(&created)?);
            } else {
                println!("{}", line(&created.subscription));
                println!(
                    "secret: {} (shown once: give it to the receiver)",
                    created.secret
                );
            }
        }
        WebhookCommand::List { after, limit, json } => {
            let subs = webhook::list(&db, after.as_deref(), limit).await?;
            if json {
                println!("{}", serde_json::to_string(&subs)?);
            } else if subs.is_empty() {
                println!("no webhook subscriptions");
            } else {
                for s in &subs {
                    println!("{}", line(s));
                }
            }
        }
        WebhookCommand::Show { id, json } => {
            let d = webhook::get(&db, &id).await?;
            if json {
                println!("{}", serde_json::to_string(&d)?);
            } else {
                println!("{}", line(&d.subscription));
                println!(
                    "log head {}; parked {} ({} requeued); started after {}",
                    d.head, d.parked, d.requeued, d.subscription.start_position
                );
                for l in &d.lane_status {
                    println!(
                        "  lane {}\tposition={}\tbehind={}\tattempts={}\tnext={}\tholder={}\terror={}",
                        l.lane,
                        l.position,
                        d.head - l.position,
                        l.attempts,
                        l.next_attempt_at,
                        l.lease_holder.as_deref().unwrap_or("-"),
                        l.last_error.as_deref().unwrap_or("-")
                    );
                }
                for g in &d.gaps {
                    println!(
                        "  LOST: lane {} events after {} through {} were deleted by retention before delivery ({})",
                        g.lane, g.after_position, g.through_position, g.recorded_at
                    );
                }
            }
        }
        WebhookCommand::Update {
            id,
            url,
            kinds,
            all_kinds,
            boards,
            all_boards,
            enable,
            disable,
            allow_http,
            allow_private_addresses,
            json,
        } => {
            let change = Change {
                url,
                kinds: if all_kinds { Some(Vec::new()) } else { kinds },
                boards: if all_boards { Some(Vec::new()) } else { boards },
                enabled: match (enable, disable) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
            };
            let s = webhook::update(
                &db,
                &id,
                &change,
                rules(allow_http, allow_private_addresses),
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                println!("{}", line(&s));
            }
        }
        WebhookCommand::Delete { id } => {
            webhook::delete(&db, &id).await?;
            println!("deleted {id}");
        }
        WebhookCommand::Parked {
            id,
            after,
            limit,
            json,
        } => {
            let rows = parked::list(&db, &id, after, limit).await?;
            if json {
                println!("{}", serde_json::to_string(&rows)?);
            } else if rows.is_empty() {
                println!("no parked deliveries");
            } else {
                for r in &rows {
                    println!(
                        "{}\t{}\t{}\tboard={}\tattempts={}\tparked={}\t{}\terror={}",
                        r.position,
                        r.event_id,
                        r.kind,
                        r.board,
                        r.attempts,
                        r.parked_at,
                        if r.requeued_at.is_some() {
                            "requeued"
                        } else {
                            "parked"
                        },
                        r.last_error.as_deref().unwrap_or("-")
                    );
                }
            }
        }
        WebhookCommand::Requeue { id, all, position } => {
            if !all && position.is_empty() {
                anyhow::bail!("say which: --all, or --position P...");
            }
            let n = parked::requeue(&db, &id, &position)
                .await
                .context("requeue")?;
            println!("requeued {n} parked deliveries");
        }
    }
    db.close();
    Ok(())
}

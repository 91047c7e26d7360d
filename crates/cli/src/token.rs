//! `lbctl token new|hash`: bearer tokens for `auth.tokens`; needs no settings or database.

use clap::Subcommand;
use ledgerboard_core::auth::{TokenTable, hash_token};

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Generate a random token; print it once, and the `auth.tokens` entry that accepts it.
    New {
        /// The token's name (in logs and rate limits): 1 to 64 of A-Z a-z 0-9 - _ .
        #[arg(long)]
        name: String,
        /// Scopes: write:*, write:<board>, read, moderate, admin (repeat or comma-separate).
        #[arg(long, required = true, value_delimiter = ',')]
        scope: Vec<String>,
    },
    /// Read a token from stdin and print its SHA-256 digest.
    Hash,
}

pub fn run(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::New { name, scope } => {
            // 244 random bits from the OS, through two v4 UUIDs (122 random bits each).
            let token = format!(
                "lb_{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            let entry = format!("{name}={}@{}", hash_token(&token), scope.join(","));
            TokenTable::parse(&entry).map_err(|e| anyhow::anyhow!(e))?;
            println!("token (shown once; give it to the client): {token}");
            println!("auth.tokens entry (entries are separated by ;): {entry}");
        }
        TokenCommand::Hash => {
            let mut token = String::new();
            std::io::stdin().read_line(&mut token)?;
            let token = token.trim_end_matches(['\r', '\n']);
            anyhow::ensure!(!token.is_empty(), "no token on stdin");
            println!("{}", hash_token(token));
        }
    }
    Ok(())
}

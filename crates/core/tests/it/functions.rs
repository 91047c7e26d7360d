//! The PL/pgSQL functions the command path calls are kept beside their callers
//! (`board/sql/functions/`), each as the migration that last defined it. A migrated database
//! must hold exactly those definitions: a function changed by a new migration without its file
//! (or the other way round) fails here.
//!
//! Each file is run in a schema of its own and `pg_get_functiondef` of both functions is
//! compared, so both sides are PostgreSQL's own spelling of a definition (its `$function$`
//! quotes, attribute order and schema-qualified name); only whitespace, the schema and
//! `CREATE OR REPLACE` / `CREATE` are normalised.

use crate::common::env;

/// (function name, its file).
const FUNCTIONS: [(&str, &str); 5] = [
    (
        "lb_command_board",
        include_str!("../../src/board/sql/functions/lb_command_board.sql"),
    ),
    (
        "board_entry_counts_add",
        include_str!("../../src/board/sql/functions/board_entry_counts_add.sql"),
    ),
    (
        "board_entry_counts_statement",
        include_str!("../../src/board/sql/functions/board_entry_counts_statement.sql"),
    ),
    (
        "board_entry_counts_bump",
        include_str!("../../src/board/sql/functions/board_entry_counts_bump.sql"),
    ),
    (
        "lb_competition_enter",
        include_str!("../../src/competition/sql/functions/lb_competition_enter.sql"),
    ),
];

/// Where each file's function is created to be compared.
const SCRATCH: &str = "function_files";

/// `definition` with runs of whitespace as one space, `CREATE OR REPLACE` as `CREATE`, and
/// `schema.` before the name dropped.
fn normalised(definition: &str, schema: &str, name: &str) -> String {
    definition
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("CREATE OR REPLACE FUNCTION", "CREATE FUNCTION")
        .replace(
            &format!("FUNCTION {schema}.{name}("),
            &format!("FUNCTION {name}("),
        )
}

async fn definition_of(client: &tokio_postgres::Client, schema: &str, name: &str) -> String {
    let row = client
        .query_one(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.proname = $2",
            &[&schema, &name],
        )
        .await
        .unwrap_or_else(|e| panic!("{schema}.{name}: {e}"));
    normalised(row.get(0), schema, name)
}

#[tokio::test]
async fn each_function_file_is_what_the_migrations_define() {
    let env = env().await;
    let client = &env.client;
    client
        .batch_execute(&format!("CREATE SCHEMA {SCRATCH}"))
        .await
        .expect("scratch schema");
    for (name, file) in FUNCTIONS {
        // The file's CREATE lands in the scratch schema, first on the search path.
        client
            .batch_execute(&format!(
                "SET search_path TO {SCRATCH}, public; {file}; RESET search_path"
            ))
            .await
            .unwrap_or_else(|e| panic!("{name}'s file: {e}"));
        let migrated = definition_of(client, "public", name).await;
        let filed = definition_of(client, SCRATCH, name).await;
        assert_eq!(
            filed, migrated,
            "board/sql/functions/{name}.sql is not what the migrations define"
        );
    }
}

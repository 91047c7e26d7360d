//! Migrations and the schema check, against the real PostgreSQL.

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::{Database, StoreError, check_schema, known_schema_version, migrate};
use ledgerboard_testkit::TestDb;

fn settings(db: &TestDb) -> DatabaseSettings {
    DatabaseSettings {
        url: db.url.clone(),
        ..DatabaseSettings::default()
    }
}

/// Tables, columns, constraints and indexes, as text, to compare schemas.
async fn schema_fingerprint(db: &TestDb) -> Vec<String> {
    let client = db.client().await;
    let rows = client
        .query(
            "SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
               FROM information_schema.columns WHERE table_schema = 'public'
             UNION ALL
             SELECT 'con ' || conname || ' ' || pg_get_constraintdef(oid)
               FROM pg_constraint WHERE connamespace = 'public'::regnamespace
             UNION ALL
             SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
             UNION ALL
             SELECT 'mig ' || version || ' ' || name FROM refinery_schema_history
             ORDER BY 1",
            &[],
        )
        .await
        .expect("fingerprint");
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn migrations_are_idempotent() {
    let db = TestDb::create().await;
    let first = migrate(&settings(&db)).await.expect("first migrate");
    assert_eq!(first.before, None);
    assert_eq!(first.after, known_schema_version());
    assert!(!first.applied.is_empty());
    let before = schema_fingerprint(&db).await;
    assert!(
        before
            .iter()
            .any(|l| l.contains("leaderboard_outbox_pending")),
        "{before:?}"
    );

    let second = migrate(&settings(&db)).await.expect("second migrate");
    assert_eq!(second.before, Some(known_schema_version()));
    assert!(second.applied.is_empty(), "{second:?}");
    assert_eq!(schema_fingerprint(&db).await, before);
}

#[tokio::test]
async fn concurrent_migrations_apply_once() {
    let db = TestDb::create().await;
    let s = settings(&db);
    let (a, b) = tokio::join!(migrate(&s), migrate(&s));
    let (a, b) = (a.expect("migrate a"), b.expect("migrate b"));
    // One run applied everything, the other found it done.
    assert_eq!(
        a.applied.len() + b.applied.len(),
        a.applied.len().max(b.applied.len())
    );
    let check = check_schema(&Database::connect(&s, "t").expect("pool"))
        .await
        .expect("check");
    assert_eq!(check.applied, Some(known_schema_version()));
}

#[tokio::test]
async fn schema_check_refuses_missing_and_newer_schemas() {
    let db = TestDb::create().await;
    let s = settings(&db);
    let pool = Database::connect(&s, "t").expect("pool");

    let empty = check_schema(&pool).await.expect("check empty");
    assert_eq!(empty.applied, None);
    let err = empty.ensure_compatible().expect_err("no schema");
    assert!(
        matches!(err, StoreError::SchemaMismatch(ref m) if m.contains("lbctl migrate")),
        "{err}"
    );

    migrate(&s).await.expect("migrate");
    check_schema(&pool)
        .await
        .expect("check")
        .ensure_compatible()
        .expect("current schema");

    // A newer binary migrated this database: this one must refuse to run, and to migrate.
    let client = db.client().await;
    client
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES ($1, 'from_the_future', now()::text, '0')",
            &[&(known_schema_version() + 1)],
        )
        .await
        .expect("plant a future version");
    let err = check_schema(&pool)
        .await
        .expect("check")
        .ensure_compatible()
        .expect_err("newer");
    assert!(err.to_string().contains("newer"), "{err}");
    let err = migrate(&s)
        .await
        .expect_err("migrate refuses a newer schema");
    assert!(err.to_string().contains("newer"), "{err}");
}

//! Migrations and the schema check, against the real PostgreSQL.

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::{
    Compatibility, Database, StoreError, check_schema, known_schema_version, migrate,
};
use ledgerboard_testkit::TestDb;

fn settings(db: &TestDb) -> DatabaseSettings {
    DatabaseSettings {
        url: db.url.as_str().into(),
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

/// A row in refinery's history table as refinery writes it, for a migration this build does
/// not embed (a newer release's).
async fn plant_version(db: &TestDb, version: i32) {
    db.client()
        .await
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES ($1, 'from_the_future', now()::text, '0')",
            &[&version],
        )
        .await
        .expect("plant a future version");
}

#[tokio::test]
async fn schema_check_accepts_the_next_release_and_refuses_missing_and_later_schemas() {
    let db = TestDb::create().await;
    let s = settings(&db);
    let pool = Database::connect(&s, "t").expect("pool");
    let known = known_schema_version();

    let empty = check_schema(&pool).await.expect("check empty");
    assert_eq!(empty.applied, None);
    let err = empty.ensure_compatible().expect_err("no schema");
    assert!(
        matches!(err, StoreError::SchemaMismatch(ref m) if m.contains("lbctl migrate")),
        "{err}"
    );

    migrate(&s).await.expect("migrate");
    let current = check_schema(&pool).await.expect("check");
    assert_eq!((current.applied, current.ahead), (Some(known), 0));
    assert_eq!(
        current.ensure_compatible().expect("current schema"),
        Compatibility::Current
    );

    // The next release migrated this database (a rolling upgrade, or a rollback after it):
    // this one runs, and its `migrate` leaves the schema as it is.
    plant_version(&db, known + 1).await;
    let next = check_schema(&pool).await.expect("check");
    assert_eq!((next.applied, next.ahead), (Some(known + 1), 1));
    assert_eq!(
        next.ensure_compatible().expect("N+1"),
        Compatibility::OneAhead
    );
    assert!(
        next.describe().contains("one migration ahead"),
        "{}",
        next.describe()
    );
    let report = migrate(&s).await.expect("migrate leaves N+1 alone");
    assert_eq!(
        (report.before, report.after, report.applied.len()),
        (Some(known + 1), known + 1, 0)
    );

    // Counted in migrations, not version numbers: a gap (refinery allows them) is still one.
    let gap = TestDb::create().await;
    migrate(&settings(&gap)).await.expect("migrate");
    plant_version(&gap, known + 10).await;
    let gap_pool = Database::connect(&settings(&gap), "t").expect("pool");
    let gapped = check_schema(&gap_pool).await.expect("check");
    assert_eq!(
        gapped.ensure_compatible().expect("one ahead"),
        Compatibility::OneAhead
    );

    // Two releases ahead: this binary must refuse to run, and to migrate.
    plant_version(&db, known + 2).await;
    let err = check_schema(&pool)
        .await
        .expect("check")
        .ensure_compatible()
        .expect_err("N+2");
    assert!(
        err.to_string().contains("2 migrations newer")
            && err.to_string().contains("deploy the newer binary"),
        "{err}"
    );
    let err = migrate(&s).await.expect_err("migrate refuses N+2");
    assert!(err.to_string().contains("newer"), "{err}");
}

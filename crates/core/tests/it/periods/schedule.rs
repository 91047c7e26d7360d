//! periods: schedule.

use super::*;

#[tokio::test]
async fn the_schedule_cuts_periods_at_the_board_zones_midnights() {
    let env = env().await;
    env.declare_resetting("daily-paris", Reset::Daily, "Europe/Paris")
        .await;
    env.declare_resetting("weekly-utc", Reset::Weekly, "UTC")
        .await;
    env.declare_resetting("monthly-ny", Reset::Monthly, "America/New_York")
        .await;
    env.declare_resetting("rounds", Reset::Every(10), "UTC")
        .await;
    // The declaration opened each board's first period now: ask about instants after it.
    let cases = [
        // Paris springs forward on 2027-03-28: that day starts at 23:00 UTC the day before
        // (UTC+1), the next at 22:00 UTC (UTC+2).
        ("daily-paris", "2027-03-28T12:00:00Z", "20270327T230000Z"),
        ("daily-paris", "2027-03-28T22:30:00Z", "20270328T220000Z"),
        (
            "daily-paris",
            "2027-03-28T21:59:59.999Z",
            "20270327T230000Z",
        ),
        // Weeks start on Monday: 2027-01-06 is a Wednesday.
        ("weekly-utc", "2027-01-06T10:00:00Z", "20270104T000000Z"),
        ("weekly-utc", "2027-01-04T00:00:00Z", "20270104T000000Z"),
        ("weekly-utc", "2027-01-03T23:59:59Z", "20261228T000000Z"),
        // 2027-02-01 03:00 UTC is still 31 January in New York (UTC-5).
        ("monthly-ny", "2027-02-01T03:00:00Z", "20270101T050000Z"),
        ("monthly-ny", "2027-02-01T05:00:00Z", "20270201T050000Z"),
        ("rounds", "2027-01-01T12:00:07.5Z", "20270101T120000Z"),
        ("rounds", "2027-01-01T12:00:10Z", "20270101T120010Z"),
    ];
    for (name, at, expected) in cases {
        assert_eq!(
            env.period_at(name, at).await.as_deref(),
            Some(expected),
            "{name} at {at}"
        );
    }

    // A manual reset after a boundary starts a period of its own; the next boundary ends it.
    env.client
        .execute(
            "INSERT INTO board_resets (board_id, starts_at, actor)
             VALUES ('weekly-utc', '2027-01-07T15:30:00Z', 'test')",
            &[],
        )
        .await
        .expect("reset");
    for (at, expected) in [
        ("2027-01-07T15:29:59Z", "20270104T000000Z"),
        ("2027-01-07T15:30:00Z", "20270107T153000Z"),
        ("2027-01-10T23:00:00Z", "20270107T153000Z"),
        ("2027-01-11T00:00:00Z", "20270111T000000Z"),
    ] {
        assert_eq!(
            env.period_at("weekly-utc", at).await.as_deref(),
            Some(expected),
            "weekly-utc at {at}"
        );
    }

    // A board that never resets has no period; an unknown zone is refused at declaration.
    env.declare_resetting("plain", Reset::Never, "UTC").await;
    assert_eq!(env.period_at("plain", "2027-01-01T00:00:00Z").await, None);
    let bad = Declaration {
        operator: Some(Operator::Add),
        reset: Some(Reset::Daily),
        time_zone: Some("Mars/Olympus_Mons".into()),
        ..Declaration::default()
    };
    let refused = definition::declare(&env.db, &board("mars"), &bad).await;
    assert!(
        matches!(
            refused,
            Err(definition::DefineError::Invalid(
                definition::DefinitionError::TimeZone
            ))
        ),
        "{refused:?}"
    );
}

/// A cron schedule's boundaries are written ahead by croner and PostgreSQL; the independent
/// reference is PostgreSQL's own calendar in the zone (`date_trunc` of the `daily`, `weekly`
/// and `monthly` kinds): at every instant from the first written boundary to the last, a cron
/// board that fires at the same midnights puts the period where its calendar twin does.
#[tokio::test]
async fn a_cron_schedule_starts_its_periods_where_the_same_calendar_kind_does() {
    let env = env().await;
    let pairs = [
        (
            "cron-weekly",
            "0 0 * * MON",
            "weekly-paris",
            Reset::Weekly,
            "Europe/Paris",
        ),
        (
            "cron-daily",
            "0 0 * * *",
            "daily-ny",
            Reset::Daily,
            "America/New_York",
        ),
        // A zone whose clock moves by half an hour.
        (
            "cron-monthly",
            "0 0 1 * *",
            "monthly-lh",
            Reset::Monthly,
            "Australia/Lord_Howe",
        ),
    ];
    for (cron_board, expr, twin, kind, zone) in &pairs {
        env.declare_resetting(cron_board, cron(expr), zone).await;
        env.declare_resetting(twin, kind.clone(), zone).await;
    }
    // A weekly schedule is written five weeks ahead, a daily one 35 days.
    assert_eq!(env.scheduled("cron-weekly").await.len(), 5);
    assert_eq!(env.scheduled("cron-daily").await.len(), 35);
    let mut compared = 0;
    for (cron_board, _, twin, _, _) in &pairs {
        let starts = env.scheduled(cron_board).await;
        let (first, last) = (starts.first().expect("one"), starts.last().expect("one"));
        let instants = env
            .client
            .query(
                "SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
                 FROM generate_series($1::text::timestamptz, $2::text::timestamptz,
                                      interval '5 hours 7 minutes') t
                 UNION ALL SELECT $1 UNION ALL SELECT $2",
                &[first, last],
            )
            .await
            .expect("instants");
        for r in instants {
            let at: String = r.get(0);
            let ours = env.period_at(cron_board, &at).await;
            assert!(ours.is_some(), "{cron_board} at {at}: no period");
            assert_eq!(ours, env.period_at(twin, &at).await, "{cron_board} at {at}");
            compared += 1;
        }
    }
    assert!(compared > 150, "{compared} instants compared");

    // The instants a skipped or repeated wall-clock time becomes: PostgreSQL's rule, written
    // through the same statement the schedule uses (times a test can choose).
    env.declare_resetting("dst", cron("30 2 * * *"), "Europe/Paris")
        .await;
    let times: Vec<String> = [
        "2027-03-28T02:30:00",
        "2027-03-28T03:00:00",
        "2027-10-31T02:30:00",
    ]
    .map(String::from)
    .to_vec();
    env.db
        .execute(
            &ledgerboard_core::board::schedule::EXTEND,
            [&"dst", &"30 2 * * *", &times],
        )
        .await
        .expect("extend");
    let written = env.scheduled("dst").await;
    for expected in [
        // 02:30 does not exist on 28 March 2027 in Paris: it fires at 03:30 CEST.
        "2027-03-28T01:30:00Z",
        "2027-03-28T01:00:00Z",
        // 02:30 happens twice on 31 October 2027: it fires at the later one (CET).
        "2027-10-31T01:30:00Z",
    ] {
        assert!(
            written.iter().any(|w| w == expected),
            "{expected} in {written:?}"
        );
    }
}

/// The definition writes a schedule's first boundaries; the reconciler's call extends the
/// schedules running short and leaves the others alone; a changed schedule takes its former
/// boundaries ahead with it.
#[tokio::test]
async fn a_cron_schedule_is_written_ahead_extended_when_short_and_cleared_when_changed() {
    let env = env().await;
    env.declare_resetting("minutely", cron("* * * * *"), "UTC")
        .await;
    let written = env.scheduled("minutely").await;
    assert_eq!(written.len(), 1_000, "a schedule that fires every minute");
    let minutes: Vec<i64> = env
        .client
        .query(
            "SELECT extract(epoch FROM starts_at)::bigint FROM board_resets
             WHERE board_id = 'minutely' AND actor = 'schedule' ORDER BY starts_at",
            &[],
        )
        .await
        .expect("epochs")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(minutes.iter().all(|m| m % 60 == 0), "whole minutes");
    assert!(
        minutes.windows(2).all(|w| w[1] - w[0] == 60),
        "one a minute, none missing"
    );
    // Nothing short: nothing extended.
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // Time passes (as if 990 minutes had): ten boundaries left ahead.
    env.client
        .execute(
            "DELETE FROM board_resets WHERE board_id = 'minutely' AND actor = 'schedule'
               AND starts_at > (SELECT starts_at FROM board_resets
                                WHERE board_id = 'minutely' AND actor = 'schedule'
                                ORDER BY starts_at OFFSET 9 LIMIT 1)",
            &[],
        )
        .await
        .expect("shorten");
    assert_eq!(env.scheduled("minutely").await.len(), 10);
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 1);
    let extended = env.scheduled("minutely").await;
    // Continued where they stopped, a minute apart, up to 1,000 ahead (one more if a minute's
    // boundary passed meanwhile).
    assert!(
        matches!(extended.len(), 1_000 | 1_001),
        "{}",
        extended.len()
    );
    assert_eq!(extended[..1_000], written[..]);
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // A yearly schedule: the next boundary is written however far, and it is not short.
    env.declare_resetting("july", cron("0 0 1 7 *"), "UTC")
        .await;
    let july = env.scheduled("july").await;
    assert_eq!(july.len(), 1, "{july:?}");
    assert!(july[0].ends_with("-07-01T00:00:00Z"), "{july:?}");
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // A board without entries may change its schedule: the former boundaries ahead go.
    definition::update(
        &env.db,
        &board("minutely"),
        &Declaration {
            reset: Some(Reset::Daily),
            ..Declaration::default()
        },
    )
    .await
    .expect("update");
    assert!(env.scheduled("minutely").await.is_empty());
}

//! The OpenAPI document and its rendered page.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};

async fn get(uri: &str) -> (StatusCode, String) {
    // The document needs no server: a pool that never connects is enough.
    let app = common::app_with(&common::Settings::default());
    common::send_text(
        &app,
        Request::get(uri).body(Body::empty()).expect("request"),
    )
    .await
}

#[tokio::test]
async fn the_document_covers_every_route_and_its_answers() {
    let (status, body) = get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doc: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{doc}"
    );
    let paths = doc["paths"].as_object().expect("paths");
    let mut names: Vec<&str> = paths.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "/v1/boards",
            "/v1/boards/{board}",
            "/v1/boards/{board}/attempts",
            "/v1/boards/{board}/periods/{period}/standings",
            "/v1/boards/{board}/periods/{period}/verification",
            "/v1/boards/{board}/reset",
            "/v1/boards/{board}/scores",
            "/v1/boards/{board}/top",
            "/v1/boards/{board}/users",
            "/v1/boards/{board}/users/{user_id}",
            "/v1/boards/{board}/users/{user_id}/around",
            "/v1/competitions",
            "/v1/competitions/{id}",
            "/v1/competitions/{id}/entries",
            "/v1/competitions/{id}/players/{user_id}",
            "/v1/competitions/{id}/results",
            "/v1/competitions/{id}/runs/{run}/close",
            "/v1/competitions/{id}/verification",
            "/v1/moderation",
            "/v1/reviews",
            "/v1/reviews/{event_id}/approve",
            "/v1/reviews/{event_id}/reject"
        ]
    );
    let attempts = &paths["/v1/boards/{board}/attempts"]["post"]["responses"];
    for code in ["200", "201", "400", "401", "403", "409", "422", "503"] {
        assert!(attempts.get(code).is_some(), "POST attempts lacks {code}");
    }
    let moderation = &paths["/v1/moderation"]["post"]["responses"];
    for code in ["200", "201", "400", "401", "403", "409", "422", "503"] {
        assert!(
            moderation.get(code).is_some(),
            "POST moderation lacks {code}"
        );
    }
    let post = &paths["/v1/boards/{board}/scores"]["post"]["responses"];
    for code in ["200", "201", "400", "409", "413", "422", "503"] {
        assert!(post.get(code).is_some(), "POST scores lacks {code}");
    }
    let top = &paths["/v1/boards/{board}/top"]["get"];
    let params: Vec<&str> = top["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in [
        "board",
        "limit",
        "offset",
        "after",
        "rank_mode",
        "consistency",
        "period",
    ] {
        assert!(params.contains(&p), "top lacks {p}: {params:?}");
    }
    let verification = &paths["/v1/boards/{board}/periods/{period}/verification"]["get"];
    for code in ["200", "401", "403", "404", "422", "503"] {
        assert!(
            verification["responses"].get(code).is_some(),
            "GET verification lacks {code}"
        );
    }
    let outcomes = &doc["components"]["schemas"]["Outcome"]["enum"];
    assert_eq!(
        outcomes,
        &serde_json::json!(["holds", "holds_with_explained_changes", "does_not_hold"]),
        "{}",
        doc["components"]["schemas"]["Outcome"]
    );
    let reset = &paths["/v1/boards/{board}/reset"]["post"]["responses"];
    for code in ["200", "401", "403", "422", "503"] {
        assert!(reset.get(code).is_some(), "POST reset lacks {code}");
    }
    let put = &paths["/v1/boards/{board}"]["put"]["responses"];
    for code in ["200", "201", "401", "403", "409", "422", "503"] {
        assert!(put.get(code).is_some(), "PUT boards lacks {code}");
    }
    let users = &paths["/v1/boards/{board}/users"]["get"]["parameters"];
    assert!(
        users.as_array().is_some_and(|p| p
            .iter()
            .any(|p| p["name"] == "ids" && p["required"] == true)),
        "{users}"
    );
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for s in [
        "CommandBody",
        "CommandOutcome",
        "ModerationBody",
        "ModerationOutcome",
        "Page",
        "Member",
        "Users",
        "RankedEntry",
        "Freshness",
        "ErrorBody",
        "DefinitionBody",
        "BoardDefinition",
        "BoardList",
        "ResetOutcome",
        "Standings",
        "Standing",
        "Submitted",
        "Column",
        "FedOutcome",
    ] {
        assert!(schemas.contains_key(s), "no schema {s}");
    }
    // Boards with columns (issue 37): a command's value is one integer, an array of them or an
    // object of them by column name; answers carry every column and each fed board's outcome.
    let kinds: Vec<&str> = schemas["Submitted"]["oneOf"]
        .as_array()
        .expect("Submitted is one of several shapes")
        .iter()
        .filter_map(|s| s["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["integer", "array", "object"],
        "{}",
        schemas["Submitted"]
    );
    for (schema, field) in [
        ("CommandOutcome", "scores"),
        ("CommandOutcome", "linked"),
        ("RankedEntry", "scores"),
        ("Member", "scores"),
        ("Standing", "scores"),
        ("DefinitionBody", "columns"),
        ("DefinitionBody", "feeds"),
        ("BoardDefinition", "columns"),
        ("BoardDefinition", "feeds"),
        ("ErrorDetail", "board"),
    ] {
        assert!(
            schemas[schema]["properties"].get(field).is_some(),
            "{schema} has no {field}: {}",
            schemas[schema]
        );
    }
}

#[tokio::test]
async fn the_docs_page_renders_it() {
    let (status, body) = get("/docs/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("swagger-ui"), "{body}");
    let (status, _) = get("/docs/swagger-ui.css").await;
    assert_eq!(status, StatusCode::OK, "assets are served from the binary");
}

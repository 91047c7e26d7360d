//! The harness's browser: chromedriver starts, a headless chromium renders a page whose text
//! reads back unescaped through a CSS locator, typing lands in the input clicked, Tab moves the
//! focus as a keyboard user's does, a script's value comes back, and a screenshot lands as a
//! PNG file.

use std::time::Duration;

use ledgerboard_harness::Browser;
use ledgerboard_harness::browser::keys;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

// The guard only orders this test after the cluster's (or before it); the test's own runtime
// has one thread, so nothing else waits on it meanwhile.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn a_headless_chromium_renders_a_page_and_screenshots_it() {
    let _alone = crate::one_at_a_time();
    let browser = Browser::start().await;
    // The entities must reach chromium's HTML parser as written: the heading's text is then
    // the characters they stand for, as a template's escaped value is on the console's pages.
    let page = "data:text/html,<title>smoke</title><h1 id=t>hello &lt;b&gt;</h1>\
                <form><input id=a><input id=b></form>";
    browser.goto(page).await;
    assert_eq!(browser.title().await, "smoke");
    assert_eq!(browser.find("h1#t").await.text().await, "hello <b>");
    assert!(
        browser
            .wait_for_text("h1#t", "hello", Duration::from_secs(1))
            .await
    );
    assert!(browser.try_find("#missing").await.is_none());
    assert_eq!(browser.find_all("input").await.len(), 2);

    let a = browser.find("#a").await;
    a.click().await;
    a.send_keys("xy").await;
    assert_eq!(a.prop("value").await, "xy");
    assert_eq!(a.attr("id").await.as_deref(), Some("a"));
    assert_eq!(a.attr("placeholder").await, None);
    assert_eq!(browser.focused_id().await, "a");
    browser.press(keys::TAB).await;
    assert_eq!(browser.focused_id().await, "b");
    // Shift is held while Tab is pressed: back to the first input.
    browser
        .press(&format!("{}{}", keys::SHIFT, keys::TAB))
        .await;
    assert_eq!(browser.focused_id().await, "a");
    a.clear().await;
    assert_eq!(a.prop("value").await, "");

    assert_eq!(browser.execute("return 1+1", vec![]).await, 2);
    let id = browser
        .execute("return arguments[0].id", vec![a.reference()])
        .await;
    assert_eq!(id, "a");

    let path = browser.screenshot("harness-smoke").await;
    let png = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        png.starts_with(PNG_SIGNATURE),
        "{} is not a PNG: {:?}",
        path.display(),
        &png[..png.len().min(16)]
    );
    browser.close().await;
}

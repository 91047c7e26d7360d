//! An element of the page and the commands on it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::webdriver::{Failure, Session, string_of};

/// The key under which W3C WebDriver names an element in JSON: the spec's "web element
/// identifier", the one chromedriver sends and accepts.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// An element of the page, as chromedriver found it. It goes stale when the page it was found
/// on is left or the element is removed; a command on a stale element panics.
pub struct Element {
    session: Arc<Session>,
    id: String,
}

impl Element {
    /// An element from a W3C element reference, `{"element-6066-…": "<id>"}`.
    pub(super) fn from_reference(session: &Arc<Session>, reference: &Value) -> Element {
        match reference.get(ELEMENT_KEY).and_then(Value::as_str) {
            Some(id) => Element {
                session: Arc::clone(session),
                id: id.to_owned(),
            },
            None => panic!("chromedriver answered no element reference: {reference}"),
        }
    }

    /// The element as W3C WebDriver names it in JSON: an argument of [`super::Browser::execute`].
    pub fn reference(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }

    /// Scrolls the element into view and clicks its centre (W3C "element click"); panics when
    /// something else would receive the click.
    pub async fn click(&self) {
        self.command("element click", "POST", "/click", Some(json!({})))
            .await;
    }

    /// Empties an editable element (W3C "element clear").
    pub async fn clear(&self) {
        self.command("element clear", "POST", "/clear", Some(json!({})))
            .await;
    }

    /// Focuses the element and types `text` into it (W3C "element send keys"; see [`super::keys`]).
    pub async fn send_keys(&self, text: &str) {
        self.command(
            &format!("element send keys {text:?}"),
            "POST",
            "/value",
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// The element's rendered text, as a user reads it (W3C "get element text").
    pub async fn text(&self) -> String {
        let text = self.command("get element text", "GET", "/text", None).await;
        string_of("get element text", text)
    }

    /// The attribute `name` as the markup set it, `None` when the element has none (W3C "get
    /// element attribute").
    pub async fn attr(&self, name: &str) -> Option<String> {
        let what = format!("get element attribute {name:?}");
        let path = format!("/attribute/{}", path_segment(name));
        match self.command(&what, "GET", &path, None).await {
            Value::Null => None,
            Value::String(value) => Some(value),
            other => panic!("{what}: chromedriver answered no string: {other}"),
        }
    }

    /// The DOM property `name` as it is now (W3C "get element property"): an input's `value`
    /// after typing, a checkbox's `checked`; `null` when the element has no such property.
    pub async fn prop(&self, name: &str) -> Value {
        let what = format!("get element property {name:?}");
        let path = format!("/property/{}", path_segment(name));
        self.command(&what, "GET", &path, None).await
    }

    async fn command(&self, what: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/element/{}{path}", self.id);
        self.session.command(what, method, &path, body).await
    }

    pub(super) async fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let path = format!("/element/{}{path}", self.id);
        self.session.try_command(method, &path, body).await
    }
}

/// `name` fit for one segment of a URL path: bytes outside the unreserved set percent-encoded.
fn path_segment(name: &str) -> String {
    let mut segment = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            segment.push(char::from(byte));
        } else {
            segment.push_str(&format!("%{byte:02X}"));
        }
    }
    segment
}

//! A server-sent events reader over the harness's HTTP/1.1 client ([`crate::http`]): one
//! request whose body is read as it arrives, message by message, each read bounded in time, so
//! a stream that stalls shows up as an error instead of a hang. For the tests of the api's
//! live updates.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;

/// One block of the stream: a message (`id`, `event`, `data` lines) or a comment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Message(Message),
    /// A line starting with `:` (a heartbeat), without the colon and one space.
    Comment(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    pub id: Option<String>,
    pub event: Option<String>,
    /// The `data` lines joined with newlines.
    pub data: String,
}

/// An open stream: its answer's status and headers (names in lowercase), and its body.
pub struct EventStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: Incoming,
    buffer: String,
    /// Items parsed and not yet taken.
    ready: std::collections::VecDeque<Item>,
}

/// Sends `GET path` to `addr` with `headers` and returns as soon as the answer's head arrived
/// (within `limit`); the body is then read with [`EventStream::next`].
pub async fn open(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    limit: Duration,
) -> io::Result<EventStream> {
    let failed = |e: &dyn std::fmt::Display| io::Error::other(format!("GET {path}: {e}"));
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(&e))?;
        tokio::spawn(conn);
        let mut builder = hyper::Request::builder()
            .method("GET")
            .uri(path)
            .header("host", addr.to_string())
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Empty::<Bytes>::new())
            .map_err(|e| failed(&e))?;
        let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        io::Result::Ok(EventStream {
            status,
            headers,
            body: response.into_body(),
            buffer: String::new(),
            ready: Default::default(),
        })
    };
    tokio::time::timeout(limit, exchange).await.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("GET {path}: no answer within {limit:?}"),
        )
    })?
}

impl EventStream {
    /// A header of the answer (`name` in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next item within `limit`: `Ok(None)` when the stream ended, an error of kind
    /// `TimedOut` when nothing whole arrived in time.
    pub async fn next(&mut self, limit: Duration) -> io::Result<Option<Item>> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Ok(Some(item));
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no event within {limit:?}"),
                    )
                })?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(io::Error::other(e.to_string())),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.push_str(&String::from_utf8_lossy(&data));
                        self.parse();
                    }
                }
            }
        }
    }

    /// The next message within `limit`, skipping comments; an error when the stream ends.
    pub async fn next_message(&mut self, limit: Duration) -> io::Result<Message> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await? {
                Some(Item::Message(m)) => return Ok(m),
                Some(Item::Comment(_)) => {}
                None => return Err(io::Error::other("the stream ended")),
            }
        }
    }

    /// The rest of the body as text (an answer that is not a stream: an error's JSON), within
    /// `limit`.
    pub async fn rest(mut self, limit: Duration) -> io::Result<String> {
        let collected = tokio::time::timeout(limit, self.body.collect())
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the body did not end"))?
            .map_err(|e| io::Error::other(e.to_string()))?;
        self.buffer
            .push_str(&String::from_utf8_lossy(&collected.to_bytes()));
        Ok(self.buffer)
    }

    /// Moves every whole block (ended by a blank line) of the buffer into `ready`.
    fn parse(&mut self) {
        while let Some(end) = self.buffer.find("\n\n") {
            let block: String = self.buffer.drain(..end + 2).collect();
            let mut message = Message::default();
            let mut has_message = false;
            for line in block.lines() {
                if let Some(comment) = line.strip_prefix(':') {
                    self.ready
                        .push_back(Item::Comment(comment.trim_start().to_owned()));
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                match field {
                    "id" => message.id = Some(value),
                    "event" => message.event = Some(value),
                    "data" => {
                        if has_message && !message.data.is_empty() {
                            message.data.push('\n');
                        }
                        message.data.push_str(&value);
                    }
                    _ => continue,
                }
                has_message = true;
            }
            if has_message {
                self.ready.push_back(Item::Message(message));
            }
        }
    }
}

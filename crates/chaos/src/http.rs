//! A small HTTP/1.1 client for the experiment and the chaos run: one request per connection,
//! bounded in time, so a stalled api shows up as an error instead of a hang.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// Sends one request to `addr` and returns the status and body.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
    limit: Duration,
) -> anyhow::Result<(u16, String)> {
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "ledgerboard")
            .header("content-type", "application/json");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let response = sender
            .send_request(builder.body(Full::new(Bytes::from(body)))?)
            .await?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        anyhow::Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    };
    tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| anyhow::anyhow!("{method} {path}: no answer within {limit:?}"))?
}

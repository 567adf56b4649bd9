//! A TCP relay between kubecache and its upstream that a test can cut —
//! every connection closed, the port refusing new ones — and restore on
//! the same port: an apiserver killed and restarted, as kubecache sees it.
//! It counts the bytes it carries from the upstream, the wire's between
//! two kubecaches.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Relay {
    /// The relay's URL, for kubecache's upstream.
    pub url: String,
    addr: SocketAddr,
    target: SocketAddr,
    running: Mutex<Option<JoinHandle<()>>>,
    /// Bytes carried from the upstream to its clients.
    down: Arc<AtomicU64>,
}

impl Relay {
    /// A relay to the `http://HOST:PORT` upstream.
    pub async fn start(target_url: &str) -> Relay {
        let target: SocketAddr = target_url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .parse()
            .expect("the upstream's URL is http(s)://IP:PORT");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let scheme = target_url.split("://").next().unwrap();
        let down = Arc::new(AtomicU64::new(0));
        Relay {
            url: format!("{scheme}://{addr}"),
            addr,
            target,
            running: Mutex::new(Some(tokio::spawn(relay(listener, target, down.clone())))),
            down,
        }
    }

    /// Bytes carried from the upstream so far (headers, framing and all).
    pub fn down_bytes(&self) -> u64 {
        self.down.load(Ordering::Relaxed)
    }

    /// Closes every connection and the port.
    pub fn cut(&self) {
        if let Some(task) = self.running.lock().unwrap().take() {
            // Dropping the task drops its listener and, with its JoinSet,
            // every connection's task and sockets.
            task.abort();
        }
    }

    /// Listens on the same port again.
    pub async fn restore(&self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 100 => {
                    tries += 1;
                    eprintln!("relay rebinding {}: {e}", self.addr);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("relay cannot listen on {} again: {e}", self.addr),
            }
        };
        *self.running.lock().unwrap() = Some(tokio::spawn(relay(
            listener,
            self.target,
            self.down.clone(),
        )));
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

async fn relay(listener: TcpListener, target: SocketAddr, down: Arc<AtomicU64>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let down = down.clone();
        connections.spawn(async move {
            let Ok(upstream) = TcpStream::connect(target).await else {
                return;
            };
            let (mut client_in, mut client_out) = client.into_split();
            let (mut up_in, mut up_out) = upstream.into_split();
            let ignore = Arc::new(AtomicU64::new(0));
            // Both ways in this task, so that cutting it cuts both.
            tokio::join!(
                pipe(&mut client_in, &mut up_out, &ignore),
                pipe(&mut up_in, &mut client_out, &down),
            );
        });
        while connections.try_join_next().is_some() {}
    }
}

/// Copies until the end (or an error), counting, then passes the end on.
async fn pipe(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    count: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                count.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

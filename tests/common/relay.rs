//! A TCP relay between kubecache and its upstream that a test can cut —
//! every connection closed, the port refusing new ones — and restore on
//! the same port: an apiserver killed and restarted, as kubecache sees it.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Relay {
    /// The relay's URL, for kubecache's upstream.
    pub url: String,
    addr: SocketAddr,
    target: SocketAddr,
    running: Mutex<Option<JoinHandle<()>>>,
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
        Relay {
            url: format!("{scheme}://{addr}"),
            addr,
            target,
            running: Mutex::new(Some(tokio::spawn(relay(listener, target)))),
        }
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
        *self.running.lock().unwrap() = Some(tokio::spawn(relay(listener, self.target)));
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

async fn relay(listener: TcpListener, target: SocketAddr) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((mut client, _)) = listener.accept().await else {
            continue;
        };
        connections.spawn(async move {
            let Ok(mut upstream) = TcpStream::connect(target).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
        while connections.try_join_next().is_some() {}
    }
}

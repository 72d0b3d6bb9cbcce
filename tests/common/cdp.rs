//! Headless Chromium driven through the DevTools protocol, for the pages' tests: a page opened,
//! real mouse clicks dispatched at places of its elements (`Input.dispatchMouseEvent`), its
//! downloads saved into a folder (`Browser.setDownloadBehavior`), JavaScript evaluated to read
//! where the elements are, screenshots. The protocol's messages are JSON over a WebSocket
//! (tungstenite); Debian's chromium is the browser (scripts/install-deps.sh installs it).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// A Chromium with one page open.
pub struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
    session: String,
}

impl Browser {
    /// Chromium started with a fresh profile in `profile`, the page at `url` open and loaded
    /// (its body's `data-ready` set), downloads going into `downloads`.
    pub fn open(url: &str, profile: &Path, downloads: &Path) -> Browser {
        let mut child = Command::new("chromium")
            .args(super::CHROMIUM_FLAGS)
            .arg("--window-size=1400,1000")
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--remote-debugging-port=0")
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts (scripts/install-deps.sh installs Debian's chromium)");
        let stderr = child.stderr.take().expect("chromium's stderr");
        let endpoint = BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| l.split("DevTools listening on ").nth(1).map(str::to_string))
            .expect("chromium prints its DevTools endpoint");
        let (ws, _) = tungstenite::connect(endpoint.trim()).expect("the DevTools WebSocket");
        let mut b = Browser {
            child,
            ws,
            next: 0,
            session: String::new(),
        };
        b.send(
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": downloads.display().to_string()}),
            false,
        );
        let target = b.send("Target.createTarget", json!({ "url": url }), false);
        let id = target["targetId"].as_str().expect("a target").to_string();
        let attached = b.send(
            "Target.attachToTarget",
            json!({"targetId": id, "flatten": true}),
            false,
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        b.wait_for("document.body && document.body.getAttribute('data-ready') === '1'");
        b
    }

    /// A protocol command (on the page's session when `on_page`), its result; panics on an
    /// error the browser reports.
    fn send(&mut self, method: &str, params: Value, on_page: bool) -> Value {
        self.next += 1;
        let mut msg = json!({"id": self.next, "method": method, "params": params});
        if on_page {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("a message to the browser");
        loop {
            let reply = self.ws.read().expect("a message from the browser");
            let Message::Text(text) = reply else { continue };
            let v: Value = serde_json::from_str(text.as_str()).expect("JSON from the browser");
            if v["id"] == json!(self.next) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            true,
        );
        r["result"]["value"].clone()
    }

    /// Wait (10 s at most) until a JavaScript expression is true in the page.
    pub fn wait_for(&mut self, expression: &str) {
        let start = Instant::now();
        while self.eval(expression) != json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the page never made true: {expression}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The top-left corner of the element `selector` in the viewport, CSS px.
    pub fn corner(&mut self, selector: &str) -> (f64, f64) {
        let r = self.eval(&format!(
            "(function(){{var r=document.querySelector({}).getBoundingClientRect();return [r.left,r.top,r.width,r.height];}})()",
            json!(selector)
        ));
        (r[0].as_f64().unwrap(), r[1].as_f64().unwrap())
    }

    /// A left click at (x, y) of the viewport, CSS px: the mouse pressed and released there.
    pub fn click_at(&mut self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.send(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                true,
            );
        }
    }

    /// A left click at (dx, dy) CSS px from the top-left corner of the element `selector`.
    pub fn click_in(&mut self, selector: &str, dx: f64, dy: f64) {
        let (x, y) = self.corner(selector);
        self.click_at(x + dx, y + dy);
    }

    /// A click in the middle of a button (or any element).
    pub fn click(&mut self, selector: &str) {
        let r = self.eval(&format!(
            "(function(){{var r=document.querySelector({}).getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2];}})()",
            json!(selector)
        ));
        self.click_at(r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
    }

    /// A screenshot of the viewport, written as PNG to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let r = self.send("Page.captureScreenshot", json!({"format": "png"}), true);
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .expect("base64");
        std::fs::write(path, png).expect("the screenshot written");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of the file `path` once a download has finished writing it (10 s at most).
pub fn downloaded(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} was never downloaded",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A click on the review page's crop (`#crop`, 8 CSS px per image pixel) at the frame pixel
/// (u, v), the crop's top-left pixel at (x0, y0): the click's offset in the canvas (CSS px,
/// whole) and the pixel the page records for it (to a tenth of a pixel, as corrections.toml
/// writes it).
pub fn crop_click(x0: f64, y0: f64, u: f64, v: f64) -> ((f64, f64), (f64, f64)) {
    let (dx, dy) = (
        ((u - x0 + 0.5) * 8.0).round(),
        ((v - y0 + 0.5) * 8.0).round(),
    );
    let r1 = |x: f64| (x * 10.0).round() / 10.0;
    ((dx, dy), (r1(x0 - 0.5 + dx / 8.0), r1(y0 - 0.5 + dy / 8.0)))
}

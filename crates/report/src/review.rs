//! The review pages: self-contained HTML (every image inside, no server, no network) that a
//! user opens in a browser to judge and fix what flexbench cannot know alone.
//!
//! - [`clicks_page`]: the board view lying in the lever's plane; the user clicks the bench
//!   origin A and a point of the horizontal through it, each first roughly on the view, then to a
//!   tenth of a pixel in a magnified window (10 screen pixels per image pixel), and downloads
//!   `clicks.toml` (`origin`, `horizontal`) for the calibration.
//! - [`flags_page`]: the flagged samples one by one: the recording's pixels about the marker
//!   (8 screen pixels per image pixel), the tracked centre (green cross) and where the fitted
//!   mechanism puts the marker (cyan ring); the user accepts the sample, drops it, or clicks the
//!   marker's true centre, and downloads `corrections.toml` (`[[drop]]` and `[[move]]` entries).
//!
//! Pixel convention (OpenCV's): pixel (i, j) is centred on (u, v) = (i, j). Clicked places are
//! rounded to 0.1 px.

use base64::Engine;

use crate::page::esc;

/// One flagged sample to review: where it is, why it was flagged, the recording's pixels about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewSample {
    /// Frame number.
    pub frame: usize,
    /// The marker's name.
    pub marker: String,
    /// The tests it failed.
    pub reasons: Vec<String>,
    /// The crop of the frame (PNG), `side` x `side` px.
    pub crop_png: Vec<u8>,
    /// The crop's top-left pixel (u, v) in the frame.
    pub origin: (i32, i32),
    /// The crop's side, px.
    pub side: i32,
    /// The tracked centre, px (None: a gap).
    pub tracked: Option<(f64, f64)>,
    /// Where the fitted mechanism puts the marker, px (None without a fit).
    pub predicted: Option<(f64, f64)>,
}

fn data_url(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// The pages' style. The header has a fixed height and the canvases no border (an outline
/// instead), so that every canvas sits on whole CSS pixels: a click's place in it is exact.
const STYLE: &str = "body{font:14px/1.4 'DejaVu Sans',Arial,sans-serif;margin:16px;color:#222}\
.head{height:150px;overflow:auto}h1{font-size:20px;margin:0 0 6px}p{margin:0 0 6px}\
button{font:inherit;margin:0 6px 6px 0;padding:4px 10px}canvas{display:block;outline:1px solid #999;margin:0}\
pre{background:#f4f4f4;padding:8px;margin:0}.row{display:flex;gap:16px;align-items:flex-start}.on{background:#cde}";

/// The page of the clicks of A and of the horizontal on the plane view `png` (`width` x `height`
/// px), named `image` in the downloaded file's comment.
pub fn clicks_page(png: &[u8], width: i32, height: i32, image: &str) -> String {
    let script = CLICKS_JS
        .replace("__W__", &width.to_string())
        .replace("__H__", &height.to_string())
        .replace(
            "__IMAGE__",
            &serde_json::to_string(image).unwrap_or_default(),
        );
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>flexbench: clicks of the bench plane</title><style>{STYLE}</style></head><body>\
<div class=\"head\"><h1>The bench plane: click A and the horizontal</h1>\
<p>Choose the point, click near it on the view, then click it exactly in the magnified window (10 screen pixels per image pixel; the place is kept to 0.1 px). A is the bench origin (the crank's pivot); the second point lies on the horizontal through A, towards the pendulum.</p>\
<p><button id=\"set-origin\" class=\"on\">Point: A (origin)</button><button id=\"set-horizontal\">Point: horizontal</button><button id=\"download\">Download clicks.toml</button></p></div>\
<div class=\"row\"><canvas id=\"view\" width=\"{width}\" height=\"{height}\" style=\"width:{width}px;height:{height}px\"></canvas>\
<div><canvas id=\"zoom\" width=\"400\" height=\"400\" style=\"width:400px;height:400px\" data-zoom=\"10\" data-half=\"20\"></canvas>\
<p>A: <b id=\"origin-value\">not set</b><br>horizontal: <b id=\"horizontal-value\">not set</b></p><pre id=\"toml\"></pre></div></div>\
<img id=\"image\" alt=\"{alt}\" src=\"{src}\" style=\"display:none\"><script>{script}</script></body></html>",
        alt = esc(image),
        src = data_url(png),
    )
}

const CLICKS_JS: &str = r#"
var W=__W__,H=__H__,IMAGE=__IMAGE__,Z=10,HALF=20;
var img=document.getElementById('image'),view=document.getElementById('view'),zoom=document.getElementById('zoom');
var pts={origin:null,horizontal:null},which='origin',cx=Math.floor(W/2),cy=Math.floor(H/2);
function r1(x){return Math.round(x*10)/10;}
function fmt(p){return p?('['+p[0]+', '+p[1]+']'):'not set';}
function toml(){return '# Pixels of the bench origin A and of a point on the horizontal through A, towards the pendulum,\n# clicked in '+IMAGE+' with flexbench\'s clicks page (to 0.1 px).\norigin = '+fmt(pts.origin)+'\nhorizontal = '+fmt(pts.horizontal)+'\n';}
function draw(){var g=view.getContext('2d');g.drawImage(img,0,0);g.strokeStyle='#0c0';g.strokeRect(cx-HALF-0.5,cy-HALF-0.5,2*HALF,2*HALF);
 for(var k in pts){var p=pts[k];if(!p)continue;g.strokeStyle=k=='origin'?'#f00':'#00f';g.beginPath();g.arc(p[0]+0.5,p[1]+0.5,6,0,7);g.stroke();}
 var z=zoom.getContext('2d');z.imageSmoothingEnabled=false;z.fillStyle='#000';z.fillRect(0,0,400,400);
 z.drawImage(img,cx-HALF,cy-HALF,2*HALF,2*HALF,0,0,2*HALF*Z,2*HALF*Z);
 for(var k in pts){var p=pts[k];if(!p)continue;var x=(p[0]-(cx-HALF)+0.5)*Z,y=(p[1]-(cy-HALF)+0.5)*Z;z.strokeStyle=k=='origin'?'#f00':'#00f';z.beginPath();z.moveTo(x-8,y);z.lineTo(x+8,y);z.moveTo(x,y-8);z.lineTo(x,y+8);z.stroke();}
 document.getElementById('origin-value').textContent=fmt(pts.origin);document.getElementById('horizontal-value').textContent=fmt(pts.horizontal);
 document.getElementById('toml').textContent=toml();}
function local(ev,el){var r=el.getBoundingClientRect();return [ev.clientX-r.left,ev.clientY-r.top];}
view.addEventListener('click',function(ev){var p=local(ev,view);cx=Math.min(Math.max(Math.floor(p[0]),HALF),W-HALF);cy=Math.min(Math.max(Math.floor(p[1]),HALF),H-HALF);draw();});
zoom.addEventListener('click',function(ev){var p=local(ev,zoom);pts[which]=[r1(cx-HALF-0.5+p[0]/Z),r1(cy-HALF-0.5+p[1]/Z)];draw();});
function choose(k){which=k;document.getElementById('set-origin').className=k=='origin'?'on':'';document.getElementById('set-horizontal').className=k=='horizontal'?'on':'';}
document.getElementById('set-origin').addEventListener('click',function(){choose('origin');});
document.getElementById('set-horizontal').addEventListener('click',function(){choose('horizontal');});
document.getElementById('download').addEventListener('click',function(){if(!pts.origin||!pts.horizontal){alert('Click both points first.');return;}
 var a=document.createElement('a');a.href=URL.createObjectURL(new Blob([toml()],{type:'text/plain'}));a.download='clicks.toml';document.body.appendChild(a);a.click();});
img.addEventListener('load',function(){draw();document.body.setAttribute('data-ready','1');});
if(img.complete){draw();document.body.setAttribute('data-ready','1');}
"#;

/// The page that steps through the flagged `samples` of the recording `video` (for the file's
/// comment); the magnification of the crops is 8 screen pixels per image pixel.
pub fn flags_page(samples: &[ReviewSample], video: &str) -> String {
    let data: Vec<serde_json::Value> = samples
        .iter()
        .map(|s| {
            serde_json::json!({
                "frame": s.frame, "marker": s.marker, "reasons": s.reasons,
                "src": data_url(&s.crop_png), "x0": s.origin.0, "y0": s.origin.1, "side": s.side,
                "tracked": s.tracked.map(|t| [t.0, t.1]), "predicted": s.predicted.map(|p| [p.0, p.1]),
            })
        })
        .collect();
    let script = FLAGS_JS
        .replace("__SAMPLES__", &serde_json::Value::Array(data).to_string())
        .replace(
            "__VIDEO__",
            &serde_json::to_string(video).unwrap_or_default(),
        );
    let side = samples.first().map_or(48, |s| s.side) * 8;
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>flexbench: review of the flagged samples</title><style>{STYLE}</style></head><body>\
<div class=\"head\"><h1>Review of the flagged samples</h1>\
<p>Each flagged sample in turn: the recording's pixels about the marker (8 screen pixels per image pixel), its tracked centre (green cross) and where the fitted mechanism puts it (cyan ring). Accept it, drop it, or click the marker's true centre (kept to 0.1 px); then download corrections.toml into the recording's folder and run again.</p>\
<p><button id=\"prev\">Previous</button><button id=\"next\">Next</button><button id=\"accept\">Accept</button><button id=\"drop\">Drop</button><button id=\"download\">Download corrections.toml</button></p>\
<p id=\"status\"></p></div><div class=\"row\"><canvas id=\"crop\" width=\"{side}\" height=\"{side}\" style=\"width:{side}px;height:{side}px\" data-zoom=\"8\"></canvas><pre id=\"toml\"></pre></div>\
<script>{script}</script></body></html>"
    )
}

const FLAGS_JS: &str = r#"
var S=__SAMPLES__,VIDEO=__VIDEO__,Z=8,i=0,imgs=[],choice=S.map(function(){return null;});
var cv=document.getElementById('crop');
function r1(x){return Math.round(x*10)/10;}
function toml(){var t='# Corrections of the tracking of '+VIDEO+', made with flexbench\'s review page: the flagged\n# samples dropped or moved to the clicked centre (px); the accepted ones are not listed.\n';
 S.forEach(function(s,k){var c=choice[k];if(!c||c.kind=='accept')return;
  if(c.kind=='drop')t+='\n[[drop]]\nmarker = "'+s.marker+'"\nframes = ['+s.frame+', '+s.frame+']\n';
  else t+='\n[[move]]\nmarker = "'+s.marker+'"\nframes = ['+s.frame+', '+s.frame+']\nto = ['+c.u+', '+c.v+']\n';});return t;}
function mark(g,p,col,cross){if(!p)return;var s=S[i],x=(p[0]-s.x0+0.5)*Z,y=(p[1]-s.y0+0.5)*Z;g.strokeStyle=col;g.lineWidth=2;g.beginPath();
 if(cross){g.moveTo(x-10,y);g.lineTo(x+10,y);g.moveTo(x,y-10);g.lineTo(x,y+10);}else{g.arc(x,y,9,0,7);}g.stroke();}
function draw(){var s=S[i];if(!s)return;var g=cv.getContext('2d');g.imageSmoothingEnabled=false;
 if(imgs[i]&&imgs[i].complete)g.drawImage(imgs[i],0,0,s.side*Z,s.side*Z);
 mark(g,s.tracked,'#0c0',true);mark(g,s.predicted,'#0cf',false);var c=choice[i];if(c&&c.kind=='move')mark(g,[c.u,c.v],'#f00',true);
 document.getElementById('status').textContent='Sample '+(i+1)+' of '+S.length+': frame '+s.frame+', '+s.marker+', flagged by '+s.reasons.join(', ')+(c?('; '+c.kind+(c.kind=='move'?(' to ('+c.u+', '+c.v+') px'):'')):'');
 cv.setAttribute('data-index',i);cv.setAttribute('data-x0',s.x0);cv.setAttribute('data-y0',s.y0);
 document.getElementById('toml').textContent=toml();}
function go(k){i=Math.min(Math.max(k,0),S.length-1);draw();}
function decide(c){choice[i]=c;draw();if(i<S.length-1)go(i+1);}
S.forEach(function(s,k){var im=new Image();im.onload=function(){if(k==i)draw();};im.src=s.src;imgs.push(im);});
cv.addEventListener('click',function(ev){var r=cv.getBoundingClientRect(),s=S[i];
 decide({kind:'move',u:r1(s.x0-0.5+(ev.clientX-r.left)/Z),v:r1(s.y0-0.5+(ev.clientY-r.top)/Z)});});
document.getElementById('accept').addEventListener('click',function(){decide({kind:'accept'});});
document.getElementById('drop').addEventListener('click',function(){decide({kind:'drop'});});
document.getElementById('prev').addEventListener('click',function(){go(i-1);});
document.getElementById('next').addEventListener('click',function(){go(i+1);});
document.getElementById('download').addEventListener('click',function(){var a=document.createElement('a');
 a.href=URL.createObjectURL(new Blob([toml()],{type:'text/plain'}));a.download='corrections.toml';document.body.appendChild(a);a.click();});
window.addEventListener('load',function(){draw();document.body.setAttribute('data-ready','1');});
"#;

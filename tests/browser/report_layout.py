#!/usr/bin/env python3
"""Checks the layout of chopper's HTML report in headless Chromium: no text outside its figure.

usage: report_layout.py CHROMIUM REPORT.html OUTDIR [--screenshots DIR [FIGURE-ID ...]]

The report's Content-Security-Policy lets only its own inline script run, so this writes a copy
(OUTDIR/layout.html) with one more inline script, whose SHA-256 it adds to the policy's
script-src. After the page loaded, that script measures through the DOM (getBoundingClientRect)
every <text> of every chart (<svg> in a <figure>) and writes what it found into
<pre id="layout-result"> as JSON, which Chromium's --dump-dom prints. It fails when
  - a text (tick label, axis title, legend entry, note) reaches outside its chart's box (the
    <svg> viewport, which clips it) by more than half a pixel;
  - a chart reaches outside its figure's box (the <figure> element) at a 1400 px wide window;
  - two texts of one legend (<g class="legend">) overlap, or a legend's text or swatch overlaps
    a text outside the legend (a tick label, an axis title);
  - two other texts of a chart overlap by more than a pixel each way (a value-axis tick label
    touching the first label under the axis at the corner);
  - a chart of lines over a few iterations (x axis title "iteration...", up to 8 values) has no
    tick label at one of them.
Each offender is printed with its figure id, text and overflow in px (OUTDIR/layout.json).

--screenshots DIR writes one PNG per figure (DIR/FIGURE-ID.png, the figure alone, cropped to its
box; every figure, or the ids given), from a copy of the report that shows only that figure.
Exit status 0 = pass; 1 = offenders; 77 = skipped (no Chromium).
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1"]
WIDTH = 1400

# Runs after the page's load event; results into #layout-result (JSON). Tolerance 0.5 px.
MEASURE = r"""
(function(){
function box(r){return {l:r.left,t:r.top,r:r.right,b:r.bottom};}
function out(a,b){return Math.max(b.l-a.l,a.r-b.r,b.t-a.t,a.b-b.b);}
function inter(a,b){var w=Math.min(a.r,b.r)-Math.max(a.l,b.l),h=Math.min(a.b,b.b)-Math.max(a.t,b.t);return w>1&&h>1?Math.min(w,h):0;}
function r1(v){return Math.round(v*10)/10;}
function run(){
var res={figures:0,charts:0,texts:0,outside:[],overlap:[],other_overlap:[],wide:[],ticks:[],sizes:{}};
document.querySelectorAll('figure').forEach(function(fig){
  res.figures++;
  var fb=box(fig.getBoundingClientRect());
  res.sizes[fig.id]=[r1(fb.r-fb.l),r1(fb.b-fb.t)];
  fig.querySelectorAll('svg').forEach(function(svg){
    res.charts++;
    var sb=box(svg.getBoundingClientRect());
    var o=out(sb,fb);
    if(o>0.5)res.wide.push({figure:fig.id,chart:svg.getAttribute('class'),overflow_px:r1(o)});
    var all=[],marks=[],labels={};
    svg.querySelectorAll('text').forEach(function(t){
      res.texts++;
      var b=box(t.getBoundingClientRect());
      if(b.r-b.l<=0&&b.b-b.t<=0)return;
      var leg=t.closest('g.legend');
      all.push({b:b,s:t.textContent,leg:leg});
      labels[t.firstChild?t.firstChild.textContent:'']=1;
      var ov=out(b,sb);
      if(ov>0.5)res.outside.push({figure:fig.id,text:t.textContent,overflow_px:r1(ov),
        side:(sb.l-b.l>0.5?'left ':'')+(b.r-sb.r>0.5?'right ':'')+(sb.t-b.t>0.5?'top ':'')+(b.b-sb.b>0.5?'bottom':''),
        legend:!!leg});
    });
    // a legend's swatches and lines against the texts outside the legend
    svg.querySelectorAll('g.legend rect, g.legend line').forEach(function(e){
      var b=box(e.getBoundingClientRect());
      all.forEach(function(a){var x=a.leg?0:inter(a.b,b);
        if(x>0)res.overlap.push({figure:fig.id,text:a.s,other:'(legend mark)',overlap_px:r1(x)});});
    });
    // a chart of lines over a few iterations (its x axis title says so): a tick label at each
    var xs={},whole=svg.querySelectorAll('polyline.series').length>0&&
      Array.prototype.some.call(svg.querySelectorAll('text.axis-title'),function(t){return /^iteration/.test(t.textContent);});
    svg.querySelectorAll('polyline.series').forEach(function(l){
      (l.getAttribute('data-x')||'').split(',').forEach(function(v){
        if(v==='')return;var n=Number(v);if(!(Math.floor(n)===n&&Math.abs(n)<1e6))whole=false;xs[v]=1;});
    });
    var keys=Object.keys(xs);
    if(whole&&keys.length<=8)keys.forEach(function(v){
      if(!labels[v])res.ticks.push({figure:fig.id,x:v});});
    for(var i=0;i<all.length;i++)for(var j=i+1;j<all.length;j++){
      var a=all[i],c=all[j];
      var x=inter(a.b,c.b);
      if(x>0)(a.leg||c.leg?res.overlap:res.other_overlap).push({figure:fig.id,text:a.s,other:c.s,overlap_px:r1(x)});
    }
  });
});
var p=document.createElement('pre');p.id='layout-result';p.hidden=true;p.textContent=JSON.stringify(res);
document.body.appendChild(p);}
window.addEventListener('load',function(){setTimeout(run,0);});
})();
"""

# The screenshot copy: only the figure asked for (one copy per figure), no page margins, the
# figure as wide as its content up to SHOT_WIDTH (a figure of panels wraps them as the page does).
SHOT_WIDTH = 1300
SHOT_STYLE = """
body{background:#fff}header,nav,footer,h2,section>p,section>table,section>div,.none{display:none}
main{padding:0;margin:0;max-width:none}section{margin:0}
figure{display:none;margin:0;width:fit-content;max-width:%dpx}#%s{display:block}
"""


def add_script(page, script):
    """the page with `script` inline before </body> and its hash added to the policy's script-src"""
    h = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    page, n = re.subn(r"(script-src [^;\"]*)", lambda m: m.group(1) + f" 'sha256-{h}'", page,
                      count=1)
    if n != 1:
        raise SystemExit("report_layout: no script-src in the report's Content-Security-Policy")
    return page.replace("</body>", "<script>" + script + "</script>\n</body>", 1)


def chromium(exe, args, timeout=120):
    t0 = time.time()
    p = subprocess.run([exe] + FLAGS + args, capture_output=True, text=True, timeout=timeout)
    return p, time.time() - t0


def measure(exe, report, outdir):
    page = open(report, encoding="utf-8").read()
    copy = os.path.join(outdir, "layout.html")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(add_script(page, MEASURE))
    p, secs = chromium(exe, ["--dump-dom", "--virtual-time-budget=5000",
                             f"--window-size={WIDTH},1000", "file://" + os.path.abspath(copy)])
    m = re.search(r'<pre id="layout-result"[^>]*>(.*?)</pre>', p.stdout, re.S)
    if p.returncode != 0 or not m:
        print(f"FAIL: chromium exited {p.returncode}, no #layout-result: {p.stderr[-2000:]}")
        return None
    err = re.search(r'<pre id="chopper-errors"[^>]*>(.*?)</pre>', p.stdout, re.S)
    res = json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    res["errors"] = err.group(1).strip() if err else "no #chopper-errors"
    res["seconds"] = round(secs, 2)
    return res


def screenshots(exe, report, res, shotdir, ids):
    shotdir = os.path.abspath(shotdir)
    os.makedirs(shotdir, exist_ok=True)
    page = open(report, encoding="utf-8").read()
    total = 0
    # every figure's box as a screenshot shows it (alone, as wide as its chart): one measurement
    copy = os.path.join(shotdir, ".sizes.html")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(add_script(page.replace("</head>", "<style>" + SHOT_STYLE % (SHOT_WIDTH - 30, "x") +
                                        "figure{display:block}</style>\n</head>", 1), MEASURE))
    p, _ = chromium(exe, ["--dump-dom", "--virtual-time-budget=3000",
                          f"--window-size={SHOT_WIDTH},1000", "file://" + copy])
    os.remove(copy)
    m = re.search(r'<pre id="layout-result"[^>]*>(.*?)</pre>', p.stdout, re.S)
    sizes = json.loads(m.group(1).replace("&amp;", "&"))["sizes"] if m else {}
    for fid in ids:
        if fid not in sizes:
            print(f"screenshot: no figure {fid}")
            continue
        w, h = sizes[fid]
        style = "<style>" + SHOT_STYLE % (SHOT_WIDTH - 30, fid) + "</style>\n</head>"
        copy = os.path.join(shotdir, f".{fid}.html")
        png = os.path.join(shotdir, fid + ".png")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(page.replace("</head>", style, 1))
        chromium(exe, ["--screenshot=" + png, f"--window-size={int(w + 0.99)},{int(h + 0.99)}",
                       "file://" + copy])
        os.remove(copy)
        if os.path.exists(png):
            total += os.path.getsize(png)
            print(f"screenshot {png}: {int(w + 0.99)}x{int(h + 0.99)} px, "
                  f"{os.path.getsize(png) // 1024} KiB")
        else:
            print(f"screenshot {fid} failed")
    print(f"screenshots: {total // 1024} KiB in all")


def main():
    args = sys.argv[1:]
    shotdir, ids = None, []
    if "--screenshots" in args:
        k = args.index("--screenshots")
        shotdir, ids = args[k + 1], args[k + 2:]
        args = args[:k]
    if len(args) != 3:
        print(__doc__)
        return 2
    exe, report, outdir = args
    if not exe or exe.endswith("NOTFOUND") or not os.path.exists(exe):
        print("SKIP: chromium not found (apt-get install chromium)")
        return 77
    os.makedirs(outdir, exist_ok=True)
    report = os.path.abspath(report)
    res = measure(exe, report, outdir)
    if res is None:
        return 1
    json.dump(res, open(os.path.join(outdir, "layout.json"), "w"), indent=1)
    print(f"report: {os.path.getsize(report) // 1024} KiB; chromium measured {res['figures']} "
          f"figures, {res['charts']} charts, {res['texts']} texts in {res['seconds']} s")
    bad = []
    if res["errors"]:
        bad.append("script errors or blocked requests: " + res["errors"][:500])
    if res["figures"] == 0 or res["texts"] == 0:
        bad.append("nothing measured")
    for o in res["outside"]:
        bad.append(f"{o['figure']}: text {o['text']!r} {o['overflow_px']} px outside its chart "
                   f"({o['side'].strip()}{', legend' if o['legend'] else ''})")
    for o in res["wide"]:
        bad.append(f"{o['figure']}: chart {o['chart']!r} {o['overflow_px']} px outside the figure")
    for o in res["ticks"]:
        bad.append(f"{o['figure']}: no tick label at x = {o['x']} (a whole value the lines have)")
    for o in res["overlap"]:
        bad.append(f"{o['figure']}: text {o['text']!r} overlaps {o['other']!r} by "
                   f"{o['overlap_px']} px (one of them in a legend)")
    for o in res["other_overlap"]:
        bad.append(f"{o['figure']}: text {o['text']!r} overlaps {o['other']!r} by "
                   f"{o['overlap_px']} px")
    if shotdir:
        screenshots(exe, report, res, shotdir, ids or sorted(res["sizes"]))
    if bad:
        print(f"FAIL: {len(bad)} layout offenders\n  " + "\n  ".join(bad[:200]))
        return 1
    print("PASS: no text outside its chart, no chart outside its figure, no text overlap")
    return 0


if __name__ == "__main__":
    sys.exit(main())

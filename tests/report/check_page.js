// Opens a polite report page in headless Chromium (Debian's, through
// playwright-core) and checks: no console error or page error, no request
// other than the page itself, a screenshot that is not blank (screen and
// print media), and a PDF print. Usage: node check_page.js PAGE.html OUT_DIR
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { chromium } = require('playwright-core');

// Decodes an 8-bit RGB/RGBA PNG (what Chromium writes) and returns the share
// of pixels that are not near-white and the number of distinct colours.
function inkShare(png) {
  let off = 8, width = 0, height = 0, ctype = 0;
  const idat = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('ascii', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8) throw new Error('PNG bit depth ' + data[8]);
      ctype = data[9];
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    off += 12 + len;
  }
  const bpp = ctype === 6 ? 4 : ctype === 2 ? 3 : 0;
  if (!bpp) throw new Error('PNG colour type ' + ctype);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const cur = Buffer.alloc(stride), prev = Buffer.alloc(stride);
  let ink = 0;
  const colours = new Set();
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? cur[i - bpp] : 0, b = prev[i];
      const c = i >= bpp ? prev[i - bpp] : 0;
      let p;
      if (f === 0) p = 0;
      else if (f === 1) p = a;
      else if (f === 2) p = b;
      else if (f === 3) p = (a + b) >> 1;
      else {
        const q = a + b - c, pa = Math.abs(q - a), pb = Math.abs(q - b),
          pc = Math.abs(q - c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = (line[i] + p) & 255;
    }
    for (let x = 0; x < width; x++) {
      const r = cur[x * bpp], g = cur[x * bpp + 1], bl = cur[x * bpp + 2];
      if (r < 230 || g < 230 || bl < 230) ink++;
      if (colours.size < 1000) colours.add((r << 16) | (g << 8) | bl);
    }
    cur.copy(prev);
  }
  return { share: ink / (width * height), colours: colours.size, width, height };
}

async function main() {
  const [page_path, out_dir] = process.argv.slice(2);
  const url = 'file://' + path.resolve(page_path);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'polite-chromium-'));
  const problems = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
      '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1000, height: 1400 },
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning')
        problems.push('console ' + m.type() + ': ' + m.text());
    });
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    ctx.on('request', (r) => {
      if (r.url() !== url) problems.push('request: ' + r.url());
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForTimeout(300);
    const shot = await page.screenshot({ fullPage: true });
    fs.writeFileSync(path.join(out_dir, 'screen.png'), shot);
    const s = inkShare(shot);
    console.log(`screen: ${s.width}x${s.height}, ink ${(s.share * 100).toFixed(1)}%, ${s.colours} colours`);
    if (s.share < 0.02 || s.colours < 8) problems.push('screenshot looks blank');
    await page.emulateMedia({ media: 'print' });
    const pshot = await page.screenshot({ fullPage: true });
    fs.writeFileSync(path.join(out_dir, 'print.png'), pshot);
    const p = inkShare(pshot);
    console.log(`print: ink ${(p.share * 100).toFixed(1)}%`);
    if (p.share < 0.02) problems.push('print screenshot looks blank');
    const pdf = await page.pdf({ format: 'A4' });
    fs.writeFileSync(path.join(out_dir, 'page.pdf'), pdf);
    console.log(`pdf: ${pdf.length} bytes`);
    if (pdf.length < 10000) problems.push('PDF looks empty');
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  for (const p of problems) console.log('PROBLEM ' + p);
  console.log(problems.length ? 'FAIL' : 'OK');
  process.exit(problems.length ? 1 : 0);
}

main().catch((e) => {
  console.log('FAIL ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});

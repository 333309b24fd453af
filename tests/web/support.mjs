// What every browser test of the web app shares: Debian's Chromium through
// playwright-core, screenshots, the flash message, API calls, the first sign-in
// (with the forced password change) and the phone-width check.
// Scripts are run by `WebFixture::run_script` (crates/cli/tests/common/mod.rs).

import { chromium } from "playwright-core";
import { mkdir } from "node:fs/promises";
import assert from "node:assert/strict";

export const step = (msg) => console.log(`-- ${msg}`);

// Runs `body({ cfg, browser, context, page, shot, flash, api })` in a fresh browser;
// prints "ok" when it returns, screenshots the page as `failure.png` when it throws.
export async function scenario(body) {
  const cfg = JSON.parse(process.argv[2]);
  await mkdir(cfg.artifacts, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  let page;
  try {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
    const shot = (name, p = page) => p.screenshot({ path: `${cfg.artifacts}/${name}.png`, fullPage: true });
    const flash = () => page.locator(".flash").first().innerText();
    // The API as the bootstrap person (or another token), JSON in and out.
    const api = async (method, path, body, token = cfg.apiToken, proof = cfg.apiProof) => {
      const res = await fetch(cfg.base + path, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(proof ? { "X-Human-Proof": proof } : {}),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      return { status: res.status, json, text };
    };
    await body({ cfg, browser, context, page, shot, flash, api });
    console.log("ok");
  } catch (e) {
    if (page) await page.screenshot({ path: `${cfg.artifacts}/failure.png`, fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await browser.close();
  }
}

// Signs in with the mailed one-time password from `path`'s sign-in redirect,
// replaces it with `cfg.newPassword`, and lands on `path`.
export async function firstSignIn(page, cfg, path = "/dashboard") {
  await page.goto(cfg.base + path);
  await page.getByLabel("E-mail").fill(cfg.email);
  await page.getByLabel("Password").fill(cfg.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/password");
  await page.getByLabel("Current password").fill(cfg.password);
  await page.getByLabel(/^New password \(at least/).fill(cfg.newPassword);
  await page.getByLabel("New password again").fill(cfg.newPassword);
  await page.getByRole("button", { name: "Save password" }).click();
  await page.waitForURL(`**${path}`);
}

// Accepts every current legal document (issuing requires it).
export async function acceptAgreements(page, cfg) {
  await page.goto(cfg.base + "/agreements");
  const accept = page.getByRole("button", { name: /^Accept / });
  while ((await accept.count()) > 0) {
    await accept.first().click();
    await page.waitForLoadState();
  }
}

// Asserts `path` needs no sideways scrolling at a phone's width (390 px).
export async function fitsAPhone(page, cfg, path) {
  const before = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(cfg.base + path);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `${path}: no sideways scrolling on a phone (overflow ${overflow}px)`);
  await page.setViewportSize(before);
}

// Asserts every visible form control of the current page has a label.
export async function everyInputLabelled(page) {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input:not([type=hidden]):not([hidden]), select, textarea")]
      .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label"))
      .map((el) => el.name || el.id));
  assert.deepEqual(unlabelled, [], `every input has a label on ${page.url()}`);
}

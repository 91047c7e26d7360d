// What the tests against a running stack share: the addresses and secrets the system test
// (crates/system-tests/tests/it/sdks.rs) passes in the environment, a player token minter
// standing in for the game's backend, and an admin's raw requests to declare boards.

import { createHmac, randomBytes } from "node:crypto";

/** The variables a stack test needs; tests skip (and the system test fails on a skip) without. */
export const stack = {
  api: process.env["LB_API_URL"],
  limited: process.env["LB_LIMITED_URL"],
  restart: process.env["LB_RESTART_URL"],
  restartBoard: process.env["LB_RESTART_BOARD"] ?? "restart",
  restartUser: process.env["LB_RESTART_USER"] ?? "restart-player",
  restartDelta: Number(process.env["LB_RESTART_DELTA"] ?? "7"),
  admin: process.env["LB_ADMIN_TOKEN"],
  kid: process.env["LB_PLAYER_KID"],
  secret: process.env["LB_PLAYER_SECRET"],
};

export const skip = stack.api === undefined || stack.admin === undefined || stack.secret === undefined
  ? "no stack: set LB_API_URL, LB_ADMIN_TOKEN, LB_PLAYER_KID, LB_PLAYER_SECRET (sdks.rs does)"
  : false;

/** A suffix of this run, so that a second run against the same stack uses new boards. */
export const RUN = randomBytes(3).toString("hex");
export const name = (base: string) => `${base}-${RUN}`;

const b64url = (s: string | Buffer) => Buffer.from(s).toString("base64url");

/** A player token as the game's backend mints it (HS256), expiring `ttlS` from now. */
export function mint(sub: string, boards: string[] = ["*"], ttlS = 600): string {
  const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT", kid: stack.kid }));
  const claims = b64url(JSON.stringify({ sub, boards, exp: Math.floor(Date.now() / 1000) + ttlS }));
  const key = Buffer.from(stack.secret ?? "", "base64url");
  const signature = createHmac("sha256", key).update(`${header}.${claims}`).digest("base64url");
  return `${header}.${claims}.${signature}`;
}

/** A request with the admin token (what a game's operator does, not the game client). */
export async function admin(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${stack.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.admin}`, "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Declares a board that player tokens may post to. */
export async function declare(board: string, definition: Record<string, unknown>): Promise<void> {
  await admin("PUT", `/v1/boards/${board}`, { write_policy: "player", ...definition });
}

/** Polls `check` every 20 ms until it returns a value, for at most `limitMs`. */
export async function eventually<T>(what: string, limitMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + limitMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${limitMs} ms (last error: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** RFC 3339 in whole seconds, `offsetS` from now. */
export function at(offsetS: number): string {
  return new Date((Math.floor(Date.now() / 1000) + offsetS) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

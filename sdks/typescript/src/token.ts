// Player tokens: the client keeps the current one, asks the game's callback for a new one when
// the api says it expired (once per call, shared by concurrent calls), and reads its `sub`.

/** The claims of a player token this client reads (it never verifies them: the api does). */
export interface PlayerClaims {
  sub?: string;
  exp?: number;
  boards?: string[];
}

/** Reads a JWT's claims without verifying it; undefined when `token` is not a JWT. */
export function readClaims(token: string): PlayerClaims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts[0]!.startsWith("eyJ")) return undefined;
  try {
    const b64 = parts[1]!.replace(/-/g, "+").replace(/_/g, "/");
    const padded = b64 + "=".repeat((4 - (b64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    const claims: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof claims === "object" && claims !== null ? (claims as PlayerClaims) : undefined;
  } catch {
    return undefined;
  }
}

export type TokenSource = () => string | Promise<string>;

export class TokenHolder {
  private token: string | undefined;
  private inflight: Promise<string> | undefined;

  constructor(token: string | undefined, private readonly refreshFn: TokenSource | undefined) {
    this.token = token;
  }

  get canRefresh(): boolean {
    return this.refreshFn !== undefined;
  }

  /** The token to send now: fetched from the callback first when the client was made without one. */
  async current(): Promise<string | undefined> {
    if (this.token === undefined && this.refreshFn !== undefined) await this.refresh(undefined);
    return this.token;
  }

  /**
   * Replaces `stale` with a new token from the callback. A caller whose token was replaced by
   * another call meanwhile gets the new one without a second callback; concurrent callers share
   * one callback.
   */
  async refresh(stale: string | undefined): Promise<void> {
    if (this.refreshFn === undefined) return;
    if (this.token !== stale) return;
    if (this.inflight === undefined) {
      const source = this.refreshFn;
      this.inflight = Promise.resolve()
        .then(() => source())
        .then((t) => {
          this.token = t;
          return t;
        })
        .finally(() => {
          this.inflight = undefined;
        });
    }
    await this.inflight;
  }
}

/** How many `/mcp` sessions may be held, by whom, and for how long without a request. */
export interface McpSessionLimits {
  /** On this instance (MCP_MAX_SESSIONS): past it, 503. */
  maxSessions: number;
  /** Per tenant (MCP_SESSIONS_PER_TENANT) and per key (MCP_SESSIONS_PER_KEY): past them, 429. */
  perTenant: number;
  perKey: number;
  /** A session with no request open and none for this long is ended (MCP_SESSION_IDLE_MS). */
  idleMs: number;
}

/** What the table knows of a session: whose it is, and when it was last used. */
export interface HeldSession {
  tenant: string;
  /** The fingerprint of the key that opened it. */
  key: string;
  /** When its last request started or ended (epoch ms). */
  lastSeen: number;
  /** Requests of it whose answer is still open (a tool call running, its own SSE stream): it is not idle then. */
  open: number;
}

/** Why a new session is refused: the status, the contract's code, and when a place may be free (seconds). */
export interface SessionRefusal {
  status: 429 | 503;
  code: 'too_many_sessions' | 'overloaded';
  message: string;
  retryAfterS: number;
}

/**
 * The `/mcp` sessions of an instance, with their caps. A session that is idle past `idleMs` is
 * ended by the sweep, and also at once when a new session needs its place: a freed place never
 * waits for the sweep's next turn. `end` closes a session's transport (the table forgets it first).
 */
export function createSessionTable<S extends HeldSession>(opts: { limits: McpSessionLimits; now: () => number; end: (session: S) => void }) {
  const { limits, now } = opts;
  const sessions = new Map<string, S>();
  const idle = (s: S, at: number) => s.open === 0 && at - s.lastSeen >= limits.idleMs;

  function remove(id: string): void {
    sessions.delete(id);
  }

  /** Ends every session idle past the limit. */
  function sweep(): void {
    const at = now();
    for (const [id, s] of sessions) {
      if (!idle(s, at)) continue;
      remove(id);
      opts.end(s);
    }
  }

  /**
   * Seconds until one of `held` could be ended for idleness (at least 1): the earliest a place
   * frees up without its holder ending a session itself. A session with a request open counts
   * as a whole idle period away.
   */
  function soonestFree(held: S[]): number {
    const at = now();
    const until = Math.min(...held.map((s) => (s.open > 0 ? limits.idleMs : s.lastSeen + limits.idleMs - at)));
    return Math.max(1, Math.ceil(until / 1000));
  }

  return {
    get: (id: string) => sessions.get(id),
    values: () => sessions.values(),
    get size() {
      return sessions.size;
    },

    /** Why a new session of `tenant` opened with `key` may not be held now, or null when it may. */
    refusal(tenant: string, key: string): SessionRefusal | null {
      sweep();
      const all = [...sessions.values()];
      const ofKey = all.filter((s) => s.tenant === tenant && s.key === key);
      if (ofKey.length >= limits.perKey) {
        return {
          status: 429,
          code: 'too_many_sessions',
          message: `this key holds ${ofKey.length} MCP sessions, its limit (MCP_SESSIONS_PER_KEY); end one (DELETE /mcp) or retry later`,
          retryAfterS: soonestFree(ofKey),
        };
      }
      const ofTenant = all.filter((s) => s.tenant === tenant);
      if (ofTenant.length >= limits.perTenant) {
        return {
          status: 429,
          code: 'too_many_sessions',
          message: `this tenant holds ${ofTenant.length} MCP sessions, its limit (MCP_SESSIONS_PER_TENANT); end one (DELETE /mcp) or retry later`,
          retryAfterS: soonestFree(ofTenant),
        };
      }
      if (all.length >= limits.maxSessions) {
        return {
          status: 503,
          code: 'overloaded',
          message: `${all.length} MCP sessions are open on this instance (MCP_MAX_SESSIONS); retry later`,
          retryAfterS: soonestFree(all),
        };
      }
      return null;
    },

    /** Holds a session from now on (its place is taken even before its initialize has been answered). */
    add(id: string, session: S): void {
      sessions.set(id, session);
    },
    remove,

    /** A request of `session` starts; the returned function says its answer has ended. */
    begin(session: S): () => void {
      session.open++;
      session.lastSeen = now();
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        session.open--;
        session.lastSeen = now();
      };
    },

    sweep,
  };
}

export type SessionTable<S extends HeldSession> = ReturnType<typeof createSessionTable<S>>;

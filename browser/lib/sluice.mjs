// Starts the real sluice binary on a free loopback port for a browser test,
// and talks to its admin API. The binary comes from SLUICE_BIN (scripts/test
// sets it to the freshly built debug binary).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on 127.0.0.1 (the OS picks it; we release it at once). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts sluice with a fresh data directory. `env` adds SLUICE_* settings.
 * Returns { url, token, admin(method, path, body), stop() }.
 */
export async function startSluice(env = {}) {
  const bin = process.env.SLUICE_BIN;
  if (!bin) throw new Error('SLUICE_BIN must name the sluice binary');
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-browser-'));
  const token = 'browser-test-admin-token-0123456789';
  // Pass on none of the caller's SLUICE_* variables: the server reads them.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('SLUICE_')),
  );
  const child = spawn(bin, ['serve'], {
    env: {
      ...base,
      SLUICE_LISTEN: `127.0.0.1:${port}`,
      SLUICE_DATA_DIR: dataDir,
      SLUICE_ADMIN_TOKEN: token,
      SLUICE_LOG: 'warn',
      // Receivers listen on loopback, which the SSRF guard refuses by default.
      SLUICE_DELIVERY__ALLOW_NETWORKS: '["127.0.0.0/8","::1/128"]',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sluice exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('sluice did not become healthy within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  async function admin(method, path, body) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return json;
  }
  async function stop() {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { url, token, admin, stop };
}

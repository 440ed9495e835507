/**
 * The load cases of the agent stress (bench/stress.ts), each a client population against one expose: the
 * flood of echo connections, the healthy TCP and HTTPS clients, TLS slowloris, clients pushing into the
 * never-reading backend, and the loops against the resetting target.
 */
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { sleep, WEB_NAME } from "./harness.js";

/** Connects, sends a few bytes, and resolves with the socket once they come back, or undefined when refused. */
export function echoConnection(port: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: "127.0.0.1", port });
    const probe = Buffer.from("flood-probe-1234");
    let got = 0;
    const onData = (chunk: Buffer) => {
      got += chunk.length;
      if (got < probe.length) return;
      socket.off("data", onData);
      socket.off("close", onClose);
      resolve(socket);
    };
    const onClose = () => resolve(undefined);
    socket.on("error", () => socket.destroy());
    socket.once("connect", () => socket.write(probe));
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}

/** Opens n echo connections, `batch` in flight at a time; the refused ones are counted, the rest returned open. */
export async function openMany(port: number, n: number, batch: number): Promise<{ open: Socket[]; refused: number }> {
  const open: Socket[] = [];
  let refused = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(batch, n) }, async () => {
      while (next < n) {
        next++;
        const socket = await echoConnection(port);
        if (socket) open.push(socket);
        else refused++;
      }
    }),
  );
  return { open, refused };
}

/** A client that sends 1 KiB every few ms on one connection and checks the echo, until stopped. */
export async function healthyTcp(port: number) {
  const socket = await echoConnection(port);
  if (!socket) throw new Error("healthy TCP client was refused before the flood");
  const counts = { roundTrips: 0, mismatches: 0 };
  let running = true;
  const loop = (async () => {
    let i = 0;
    while (running && !socket.destroyed) {
      const payload = Buffer.alloc(1024, i++ % 251);
      const back = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        let got = 0;
        const onData = (chunk: Buffer) => {
          chunks.push(chunk);
          got += chunk.length;
          if (got >= payload.length) done();
        };
        const done = () => {
          socket.off("data", onData);
          socket.off("close", done);
          resolve(Buffer.concat(chunks));
        };
        socket.on("data", onData);
        socket.once("close", done);
        socket.write(payload);
      });
      if (back.equals(payload)) counts.roundTrips++;
      else counts.mismatches++;
      await sleep(20);
    }
  })();
  return {
    counts,
    async stop() {
      running = false;
      await loop;
      socket.destroy();
    },
  };
}

/** An HTTPS keep-alive client (one socket) asking every few ms, until stopped. */
export async function healthyHttps(port: number, ca: string) {
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca, servername: WEB_NAME });
  const ask = () =>
    new Promise<number>((resolve) => {
      const req = httpsRequest({ host: "127.0.0.1", port, path: "/", agent, headers: { host: WEB_NAME } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", () => resolve(0));
      req.end();
    });
  if ((await ask()) !== 200) throw new Error("healthy HTTPS client failed before the flood");
  const counts = { ok: 1, failed: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      if ((await ask()) === 200) counts.ok++;
      else counts.failed++;
      await sleep(20);
    }
  })();
  return {
    counts,
    async stop() {
      running = false;
      await loop;
      agent.destroy();
    },
  };
}

/** TLS slowloris clients: even ones never start the handshake, odd ones drip header lines and never finish. */
export function slowloris(port: number, n: number, ca: string) {
  const state = { total: n, closedByAgent: 0 };
  const sockets: Socket[] = [];
  let stopping = false;
  for (let i = 0; i < n; i++) {
    let socket: Socket;
    if (i % 2 === 0) {
      socket = netConnect({ host: "127.0.0.1", port });
    } else {
      const tls = tlsConnect({ host: "127.0.0.1", port, servername: WEB_NAME, ca });
      let drip: NodeJS.Timeout | undefined;
      tls.once("secureConnect", () => {
        tls.write(`GET / HTTP/1.1\r\nhost: ${WEB_NAME}\r\n`);
        drip = setInterval(() => tls.write("x-slow: 1\r\n"), 250);
      });
      tls.once("close", () => clearInterval(drip));
      socket = tls;
    }
    socket.resume(); // a 408 may come back before the close
    socket.on("error", () => socket.destroy());
    socket.once("close", () => {
      if (!stopping) state.closedByAgent++;
    });
    sockets.push(socket);
  }
  return {
    state,
    stop() {
      stopping = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Clients that push into the never-reading backend until nothing drains for a second (or 8 MiB each). */
export async function stalledClients(port: number, n: number) {
  const chunk = Buffer.alloc(64 * 1024, 0x73);
  const sockets: Socket[] = [];
  const pushed = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<number>((resolve) => {
          const socket = netConnect({ host: "127.0.0.1", port });
          sockets.push(socket);
          let timer: NodeJS.Timeout | undefined;
          const done = () => {
            clearTimeout(timer);
            socket.off("drain", push);
            resolve(socket.bytesWritten - socket.writableLength);
          };
          const push = () => {
            clearTimeout(timer);
            while (socket.bytesWritten < 8 * 2 ** 20) {
              if (!socket.write(chunk)) {
                timer = setTimeout(done, 1000);
                return;
              }
            }
            done();
          };
          socket.on("drain", push);
          socket.on("error", () => socket.destroy());
          socket.once("close", done);
          socket.once("connect", push);
        }),
    ),
  );
  return {
    bytesPushedMiB: pushed.reduce((a, b) => a + b, 0) / 2 ** 20,
    stop() {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Loops that connect to the resetting target, send, and wait for the reset to come through, until stopped. */
export function resetLoops(port: number, n: number) {
  const counts = { attempts: 0, completed: 0 };
  let running = true;
  const loops = Array.from({ length: n }, async () => {
    while (running) {
      counts.attempts++;
      await new Promise<void>((resolve) => {
        const socket = netConnect({ host: "127.0.0.1", port });
        socket.on("error", () => socket.destroy());
        socket.once("connect", () => socket.write("ping"));
        socket.resume();
        socket.once("close", () => resolve());
      });
      counts.completed++;
      await sleep(10);
    }
  });
  return {
    counts,
    /** Waits up to 5 s for attempts in flight; one still open then is a hang (completed < attempts). */
    async stop() {
      running = false;
      await Promise.race([Promise.all(loops), sleep(5000)]);
    },
  };
}

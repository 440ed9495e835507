/** Median wall time of `fn` over `runs` runs after one warm-up (JIT and lazy module state), in ms. */
export function medianMs(fn: () => void, runs = 5): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)] * 100) / 100;
}

/**
 * An ESM bundle of `entry` for Node 22 with esbuild (tsx's own dependency), so a bench runs compiled
 * JavaScript as the image does instead of the tsx loader. `externalPackages` keeps dependencies in
 * node_modules (the image's dist/ + node_modules). Undefined when esbuild is not available.
 */
export async function bundleForNode(
  entry: string,
  outfile: string,
  opts: { externalPackages?: boolean } = {},
): Promise<string | undefined> {
  let esbuild: typeof import("esbuild");
  try {
    esbuild = await import("esbuild");
  } catch {
    return undefined;
  }
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    logLevel: "silent",
    ...(opts.externalPackages ? { packages: "external" as const } : {}),
    // CommonJS dependencies (prom-client, ajv) call require() for Node built-ins.
    banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
  });
  return outfile;
}

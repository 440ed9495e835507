/** `tailnet-operator render`: lands with the render issue; until then it says so. */
export async function runRender(_args: string[]): Promise<number> {
  process.stderr.write("render: not available in this version\n");
  return 2;
}

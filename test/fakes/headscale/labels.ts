/** DNS-label validation as Headscale 0.29.3 words it for a rename (hscontrol/types/node.go ValidateGivenName). */

/** tailscale.com util/dnsname ValidLabel's wording (v1.102.5), or undefined for a valid label. */
export function invalidLabel(label: string): string | undefined {
  const q = JSON.stringify(label);
  const alnum = (c: string) => /^[A-Za-z0-9]$/.test(c);
  if (label.length === 0) return "empty DNS label";
  if (label.length > 63) return `${q} is too long, max length is 63 bytes`;
  if (!alnum(label[0])) return `${q} is not a valid DNS label: must start with a letter or number`;
  if (!alnum(label[label.length - 1])) return `${q} is not a valid DNS label: must end with a letter or number`;
  for (let i = 1; i < label.length - 1; i++) {
    if (!alnum(label[i]) && label[i] !== "-") {
      return `${q} is not a valid DNS label: contains invalid character ${goQuoteByte(label[i])}`;
    }
  }
  return undefined;
}

/** Go's %q of a byte (a rune literal): '_', '.', '\''. */
function goQuoteByte(c: string): string {
  return c === "'" ? "'\\''" : c === "\\" ? "'\\\\'" : `'${c}'`;
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Cidr, parseCidr } from "../../src/net/cidr.js";
import { coveredDefaultRoutes } from "../../src/net/exit.js";

const cidrs = (...texts: string[]): Cidr[] =>
  texts.map((t) => {
    const r = parseCidr(t);
    if (!r.ok) throw new Error(r.message);
    return r.cidr;
  });

describe("coveredDefaultRoutes: a route set whose union is a whole address family is an exit route", () => {
  const rows: { name: string; routes: string[]; covered: string[] }[] = [
    { name: "the literal pair", routes: ["0.0.0.0/0", "::/0"], covered: ["0.0.0.0/0", "::/0"] },
    {
      name: "the issue's halves",
      routes: ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"],
      covered: ["0.0.0.0/0", "::/0"],
    },
    { name: "IPv6 halves only", routes: ["::/1", "8000::/1"], covered: ["::/0"] },
    { name: "IPv4 halves only", routes: ["128.0.0.0/1", "0.0.0.0/1"], covered: ["0.0.0.0/0"] },
    {
      name: "0.0.0.0/0 split into eight /3",
      routes: [0, 32, 64, 96, 128, 160, 192, 224].map((a) => `${a}.0.0.0/3`),
      covered: ["0.0.0.0/0"],
    },
    {
      name: "overlapping pieces",
      routes: ["0.0.0.0/1", "64.0.0.0/2", "128.0.0.0/2", "128.0.0.0/1"],
      covered: ["0.0.0.0/0"],
    },
    {
      name: "one /3 short of the whole space",
      routes: [0, 32, 64, 96, 128, 160, 192].map((a) => `${a}.0.0.0/3`),
      covered: [],
    },
    { name: "a half alone", routes: ["0.0.0.0/1"], covered: [] },
    { name: "halves of different families", routes: ["0.0.0.0/1", "8000::/1"], covered: [] },
    { name: "ordinary subnets", routes: ["10.0.0.0/8", "192.168.0.0/16"], covered: [] },
    { name: "nothing", routes: [], covered: [] },
  ];
  for (const row of rows) {
    it(row.name, () => assert.deepEqual(coveredDefaultRoutes(cidrs(...row.routes)), row.covered));
  }

  it("host routes covering all of IPv4 in two /1s plus one extra /32 still count once", () => {
    assert.deepEqual(coveredDefaultRoutes(cidrs("0.0.0.0/1", "128.0.0.0/1", "10.0.0.1/32")), ["0.0.0.0/0"]);
  });
});

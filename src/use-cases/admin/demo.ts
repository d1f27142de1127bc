import type { Operations } from './operations.js';

/**
 * The demo data `./scripts/up.sh` seeds (`import-admin demo`). Every example of the API documentation (docs/api.md,
 * the OpenAPI document's examples) names this supplier and team, so that they work pasted after up.sh.
 */
export const DEMO = { organisation: 'Demo Energy', supplier: 'DEMO', team: 'Migrations' } as const;

/**
 * Idempotent demo data. API keys are only ever shown at creation, so each run mints a fresh one. The answer
 * names the payment vendors the deployment enables (PAYMENT_VENDORS; `up.sh` adds SIMULATED for demos).
 */
export async function seedDemo(ops: Operations, baseUrl: string, paymentVendors: readonly string[]) {
  await ops.ensureOrganisation(DEMO.organisation);
  try {
    await ops.showSupplier(DEMO.supplier);
  } catch {
    // silent-ok: no demo supplier yet (showSupplier says so): it is created now
    await ops.createSupplier(DEMO.supplier, DEMO.organisation, { documentRoot: 'migrations/demo' });
  }
  await ops.ensureTeam(DEMO.team);
  // v2 schedules of the demo supplier need no team in the payload.
  await ops.setSupplierDefaultTeam(DEMO.supplier, DEMO.team);
  const key = await ops.createApiKey(DEMO.organisation);
  const query = `mutation { obtainKrakenToken(input: {APIKey: \\"${key.api_key}\\"}) { token refreshToken refreshExpiresIn } }`;
  return {
    organisation: DEMO.organisation,
    import_supplier: DEMO.supplier,
    operations_team: DEMO.team,
    api_key: key.api_key,
    payment_vendors: paymentVendors,
    ...(paymentVendors.includes('SIMULATED') && {
      simulated_payment_references: 'sim_ok… exists, sim_flaky… fails twice then exists, sim_down… is down',
    }),
    get_token: `curl -s ${baseUrl}/v1/graphql/ -H 'Content-Type: application/json' -d '{"query": "${query}"}'`,
  };
}

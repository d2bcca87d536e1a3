import type { PoolConfig } from 'pg';

// Supabase's pooler (Supavisor, or PgBouncer when self-hosted) serves session mode on port
// 5432 and transaction mode on port 6543. In transaction mode a client holds a server
// connection only for a transaction, so LISTEN does not stay with the hub (Supabase lists it
// as unsupported there): other hubs' writes reach this hub's subscribers only when this hub
// writes itself (its change feed then reads everything new).

/** Supabase's transaction-mode pooler port. */
export const TRANSACTION_POOLER_PORT = 6543;

/** The port a pool connects to, from its options or its connection string. */
function portOf(config: PoolConfig): number | undefined {
  if (config.port !== undefined) return Number(config.port);
  if (!config.connectionString) return undefined;
  try {
    const port = new URL(config.connectionString).port;
    return port ? Number(port) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the connection cannot carry LISTEN, when it looks like Supabase's transaction pooler
 * (port 6543); null otherwise. A guess from the port alone: the store only warns with it.
 */
export function transactionPoolerWarning(config: PoolConfig): string | null {
  if (portOf(config) !== TRANSACTION_POOLER_PORT) return null;
  return `port ${TRANSACTION_POOLER_PORT} is the transaction-mode port of Supabase's pooler, where LISTEN does not work: other hubs' writes reach this hub's subscribers late or not at all. Give the hub the session-mode (port 5432) or direct connection string`;
}

// A JSON-RPC error this server answers with, its message as written. The SDK's McpError puts
// "MCP error <code>: " in front of its message, the SDK sends that message as it is, and the
// client's McpError puts the same words in front again: models read
// "MCP error -32602: MCP error -32602: unknown tool ...".

/** A protocol error (a JSON-RPC error code, a message, optional data) for the SDK to send. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

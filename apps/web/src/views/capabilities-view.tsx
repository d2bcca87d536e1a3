import type { WebClient } from '@ctxbus/adapter-web';
import { Badge, ErrorBox, TableScroll } from '../ui.js';
import { useHubData } from '../use-hub-data.js';

/** Presence has no stream event: the matrix reloads on this period. */
export const PRESENCE_REFRESH_MS = 5_000;

/** What each runtime can do (capabilities.yaml) and which of them are online now. */
export function CapabilitiesView({ client }: { client: WebClient }) {
  const matrix = useHubData(() => client.capabilities(), [client], PRESENCE_REFRESH_MS);
  const data = matrix.data;
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Capabilities
      </h1>
      <ErrorBox error={matrix.error} />
      {data && (
        <>
          <p class="muted">
            {data.source.status === 'loaded'
              ? `From ${data.source.file ?? 'the capabilities file'}`
              : 'No capabilities file is loaded: the matrix is empty.'}
            {data.source.error && ` (its last change did not parse: ${data.source.error.message})`}
            {data.team ? `; presence of team ${data.team}` : ''}
          </p>
          <TableScroll label="Capability matrix">
            <table data-testid="capability-matrix">
              <thead>
                <tr>
                  <th scope="col">Runtime</th>
                  <th scope="col">Presence</th>
                  {data.capabilityNames.map((name) => (
                    <th key={name} scope="col">
                      {name.replace(/_/g, ' ')}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {data.runtimes.map((runtime) => (
                  <tr key={runtime.id} data-testid="capability-runtime" data-runtime={runtime.id}>
                    <th scope="row">
                      {runtime.id}
                      {runtime.description && <div class="muted small">{runtime.description}</div>}
                    </th>
                    <td data-testid="presence">
                      {runtime.presence.online ? (
                        <Badge kind="online">
                          online: {runtime.presence.instances.length} instance
                          {runtime.presence.instances.length === 1 ? '' : 's'}
                          {runtime.presence.workers > 0 &&
                            `, ${runtime.presence.workers} worker${runtime.presence.workers === 1 ? '' : 's'}`}
                        </Badge>
                      ) : (
                        <Badge kind="offline">offline</Badge>
                      )}
                    </td>
                    {data.capabilityNames.map((name) => {
                      const capability = runtime.capabilities[name];
                      return (
                        <td key={name}>
                          {capability ? (
                            <>
                              <Badge kind={`mode-${capability.mode}`}>{capability.mode}</Badge>
                              {capability.via && <div class="muted small">{capability.via}</div>}
                            </>
                          ) : (
                            <span class="muted">—</span>
                          )}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
          {data.remoteExecution && (
            <p>
              Remote execution allows{' '}
              <code>{data.remoteExecution.allow.join(', ') || 'nothing'}</code>
              {data.remoteExecution.workdir && (
                <>
                  {' '}
                  in <code>{data.remoteExecution.workdir}</code>
                </>
              )}
              ; anything else waits for a human.
            </p>
          )}
        </>
      )}
    </section>
  );
}

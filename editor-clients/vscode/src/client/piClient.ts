// The typed client layer: vscode-jsonrpc over any pair of streams (the daemon's stdio in the
// extension, an in-memory replay in the unit tests). Knows nothing about VS Code.
import type { Readable, Writable } from "node:stream";
import {
  type CancellationToken,
  CancellationTokenSource,
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import type { AgentEvent, ClientNotifications, Methods, ServerRequests } from "../protocol";

export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M]["params"];
export type ResultOf<M extends MethodName> = Methods[M]["result"];
export type ServerRequestName = keyof ServerRequests;

/**
 * Answers one kind of daemon→client request. `token` is cancelled when the daemon sends
 * `$/cancelRequest` for it (an abort while an approval waits), so the handler can close its UI.
 */
export type ServerRequestHandler<M extends ServerRequestName> =
  (params: ServerRequests[M]["params"], token: CancellationToken) => Promise<ServerRequests[M]["result"]>;

/** A request in flight that can be cancelled with `$/cancelRequest`. */
export interface PendingRequest<T> {
  readonly result: Promise<T>;
  cancel(): void;
}

export class PiClient {
  private readonly connection: MessageConnection;
  private readonly eventListeners = new Set<(event: AgentEvent) => void>();
  private closed = false;

  constructor(input: Readable, output: Writable) {
    this.connection = createMessageConnection(new StreamMessageReader(input), new StreamMessageWriter(output));
    this.connection.onNotification("agent/event", (params: AgentEvent) => {
      for (const listener of this.eventListeners) listener(params);
    });
    this.connection.onClose(() => {
      this.closed = true;
    });
    this.connection.listen();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onEvent(listener: (event: AgentEvent) => void): { dispose(): void } {
    this.eventListeners.add(listener);
    return { dispose: () => this.eventListeners.delete(listener) };
  }

  onClose(listener: () => void): void {
    this.connection.onClose(listener);
  }

  /** A request; after the connection closed it is a rejected promise (vscode-jsonrpc throws). */
  request<M extends MethodName>(method: M, params?: ParamsOf<M>): Promise<ResultOf<M>> {
    try {
      return this.connection.sendRequest<ResultOf<M>>(method, params ?? {});
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A request whose `$/cancelRequest` the caller controls (a prompt, which resolves at agent_end). */
  cancellable<M extends MethodName>(method: M, params: ParamsOf<M>): PendingRequest<ResultOf<M>> {
    const source = new CancellationTokenSource();
    let result: Promise<ResultOf<M>>;
    try {
      result = this.connection.sendRequest<ResultOf<M>>(method, params, source.token);
    } catch (error) {
      result = Promise.reject(error);
    }
    void result.finally(() => source.dispose()).catch(() => undefined);
    return { result, cancel: () => source.cancel() };
  }

  /** Serves a daemon→client request; an error thrown becomes the JSON-RPC error response. */
  onRequest<M extends ServerRequestName>(method: M, handler: ServerRequestHandler<M>): void {
    this.connection.onRequest(method, (params: ServerRequests[M]["params"], token: CancellationToken) => handler(params, token));
  }

  notify<N extends keyof ClientNotifications>(method: N, params?: ClientNotifications[N]): Promise<void> {
    return this.connection.sendNotification(method, params ?? {});
  }

  /** `shutdown` then `exit`: the daemon aborts any run, kills its tools and exits 0. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    try {
      await this.request("shutdown");
      await this.notify("exit");
    } finally {
      this.dispose();
    }
  }

  dispose(): void {
    this.closed = true;
    this.connection.dispose();
  }
}

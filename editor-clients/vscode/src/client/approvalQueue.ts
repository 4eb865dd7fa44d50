// The tool calls the daemon is waiting on (`approval/request`), each until the user decides or the
// daemon cancels it (an abort sends `$/cancelRequest`). No VS Code imports: the extension draws its
// UI from `onChange`, and the unit tests drive the queue against the real daemon.
import { type CancellationToken, ResponseError } from "vscode-jsonrpc";
import type { ApprovalDecision, ApprovalRequest } from "../protocol";
import { ErrorCodes } from "../protocol";

export type ApprovalChange =
  | { kind: "added"; request: ApprovalRequest }
  /** `cancelled`: the daemon withdrew the request, or it went away. */
  | { kind: "removed"; request: ApprovalRequest; outcome: ApprovalDecision["outcome"] | "cancelled" };

interface Waiting {
  request: ApprovalRequest;
  finish(decision: ApprovalDecision | undefined): void;
}

export class ApprovalQueue {
  private readonly waiting = new Map<string, Waiting>();
  private readonly listeners = new Set<(change: ApprovalChange) => void>();

  /** The `approval/request` handler: the user's decision, or a -32800 error once cancelled. */
  ask(request: ApprovalRequest, token: CancellationToken): Promise<ApprovalDecision> {
    return new Promise((resolve, reject) => {
      if (token.isCancellationRequested) {
        reject(cancelledError());
        return;
      }
      const subscription = token.onCancellationRequested(() => this.settle(request.toolCallId, undefined));
      this.waiting.set(request.toolCallId, {
        request,
        finish: (decision) => {
          subscription.dispose();
          if (decision) resolve(decision);
          else reject(cancelledError());
        },
      });
      this.emit({ kind: "added", request });
    });
  }

  /** Answers a waiting call; false when it no longer waits (decided elsewhere, or cancelled). */
  decide(toolCallId: string, decision: ApprovalDecision): boolean {
    return this.settle(toolCallId, decision);
  }

  /** Withdraws every request (the daemon died or is being stopped). */
  cancelAll(): void {
    for (const toolCallId of [...this.waiting.keys()]) this.settle(toolCallId, undefined);
  }

  get pending(): ApprovalRequest[] {
    return [...this.waiting.values()].map((w) => w.request);
  }

  get(toolCallId: string): ApprovalRequest | undefined {
    return this.waiting.get(toolCallId)?.request;
  }

  onChange(listener: (change: ApprovalChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private settle(toolCallId: string, decision: ApprovalDecision | undefined): boolean {
    const waiting = this.waiting.get(toolCallId);
    if (!waiting) return false;
    this.waiting.delete(toolCallId);
    waiting.finish(decision);
    this.emit({ kind: "removed", request: waiting.request, outcome: decision?.outcome ?? "cancelled" });
    return true;
  }

  private emit(change: ApprovalChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

function cancelledError(): ResponseError<void> {
  return new ResponseError(ErrorCodes.cancelled, "The approval request was cancelled");
}

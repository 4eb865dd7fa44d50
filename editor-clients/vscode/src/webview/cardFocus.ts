// "Pi: Next Card" / "Pi: Previous Card": the keyboard moves a focus ring through the tool cards, so
// a card's buttons (Allow, Open diff, Open full log) are a Tab away without the mouse. A card that is
// redrawn (its status or live output changed) keeps the ring, the keyboard focus and a rejection
// reason being typed.

const RING = "card-focused";

/** Focuses the card after (`1`) or before (`-1`) the focused one; from none, the last card. */
export function moveCardFocus(list: HTMLElement, delta: 1 | -1): void {
  const cards = Array.from(list.querySelectorAll<HTMLElement>(".tool"));
  if (cards.length === 0) return;
  const current = cards.findIndex((card) => card.classList.contains(RING));
  const next = current < 0 ? cards.length - 1 : Math.min(cards.length - 1, Math.max(0, current + delta));
  for (const card of cards) card.classList.remove(RING);
  const card = cards[next];
  card.classList.add(RING);
  card.tabIndex = -1;
  card.focus();
  card.scrollIntoView({ block: "nearest" });
}

/** The child-index path from `root` down to `node` (a descendant of it). */
function pathTo(root: HTMLElement, node: Element): number[] {
  const path: number[] = [];
  for (let at: Element = node; at !== root && at.parentElement; at = at.parentElement) {
    path.unshift(Array.from(at.parentElement.children).indexOf(at));
  }
  return path;
}

/** The element at `path` under `root` when it is the same kind of element as `like`. */
function counterpart(root: HTMLElement, path: number[], like: Element): HTMLElement | undefined {
  let at: Element | undefined = root;
  for (const index of path) at = at?.children[index];
  return at instanceof HTMLElement && at.tagName === like.tagName && at.className === like.className ? at : undefined;
}

/** Puts `fresh` where `old` is, carrying over what the user had in the old card. */
export function replaceCard(old: HTMLElement, fresh: HTMLElement): void {
  const ringed = old.classList.contains(RING);
  if (ringed) {
    fresh.classList.add(RING);
    fresh.tabIndex = -1;
  }
  const typed = old.querySelector<HTMLInputElement>(".approval-reason");
  const reason = fresh.querySelector<HTMLInputElement>(".approval-reason");
  if (typed?.value && reason) reason.value = typed.value;
  const active = document.activeElement;
  const focused = active && old.contains(active) ? active : undefined;
  const path = focused && focused !== old ? pathTo(old, focused) : undefined;
  old.replaceWith(fresh);
  if (!focused) return;
  // The same control when the redrawn card still has it (a button, the reason box), else the card.
  const target = (path && counterpart(fresh, path, focused)) ?? (ringed || focused === old ? fresh : undefined);
  if (target) {
    if (target === fresh) fresh.tabIndex = -1;
    target.focus();
  }
}

// "Pi: Next Card" / "Pi: Previous Card": the keyboard moves a focus ring through the tool cards, so
// a card's buttons (Allow, Open diff, Open full log) are a Tab away without the mouse.

/** Focuses the card after (`1`) or before (`-1`) the focused one; from none, the last card. */
export function moveCardFocus(list: HTMLElement, delta: 1 | -1): void {
  const cards = Array.from(list.querySelectorAll<HTMLElement>(".tool"));
  if (cards.length === 0) return;
  const current = cards.findIndex((card) => card.classList.contains("card-focused"));
  const next = current < 0 ? cards.length - 1 : Math.min(cards.length - 1, Math.max(0, current + delta));
  for (const card of cards) card.classList.remove("card-focused");
  const card = cards[next];
  card.classList.add("card-focused");
  card.tabIndex = -1;
  card.focus();
  card.scrollIntoView({ block: "nearest" });
}

/**
 * The engine's link to the reply sender, attachable after the runtime exists: the runtime builds the engine
 * before anything that dials (the sender needs the runtime's pool, config and egress guard), so the engine
 * kicks this relay and the sender attaches itself to it when it starts. Kicks with nobody attached are dropped:
 * a sender polls for `pending` rows anyway, a kick only saves it the wait.
 */
export class ReplyKicks {
  private target: { kick(): void } | undefined;

  constructor(initial?: { kick(): void }) {
    this.target = initial;
  }

  /** Routes kicks to `sender` from now on (undefined detaches). */
  attach(sender: { kick(): void } | undefined): void {
    this.target = sender;
  }

  kick(): void {
    this.target?.kick();
  }
}

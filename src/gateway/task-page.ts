/**
 * Page sizes of a task listing. Apart from task-list.ts (which needs the workflow store) so the CLI can show
 * them in `task list --help` without loading the database client.
 */
export const DEFAULT_TASK_PAGE_SIZE = 50;
export const MAX_TASK_PAGE_SIZE = 500;

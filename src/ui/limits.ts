/** The last pushes the overview shows (in a module of its own: the CLI reads it without loading the server). */
export const UI_PUSHES = 5;

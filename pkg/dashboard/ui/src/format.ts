// How times, durations and counts read on the pages, as kubectl prints them.

export function duration(seconds: number): string {
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 ? `${seconds % 60}s` : ""}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h${minutes % 60 ? `${minutes % 60}m` : ""}`;
  return `${Math.floor(hours / 24)}d`;
}

// age is how long ago time was, e.g. "5m".
export function age(time: string | undefined, now: number = Date.now()): string {
  if (!time) return "";
  return duration((now - Date.parse(time)) / 1000);
}

// until is how long until time, e.g. "in 5m", or "" when it passed.
export function until(time: string | undefined, now: number = Date.now()): string {
  if (!time) return "";
  const seconds = (Date.parse(time) - now) / 1000;
  return seconds > 0 ? duration(seconds) : "any moment";
}

export function timestamp(time: string | undefined): string {
  if (!time) return "";
  return new Date(time).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

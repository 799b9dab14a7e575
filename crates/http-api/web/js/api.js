// The HTTP API and the /event stream, as every other client uses them. Requests are same-origin:
// the browser adds the server's Basic credentials once the person has entered them.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The project directory every call addresses (`?directory=`); empty: the server's own.
let directory = '';

export function setDirectory(dir) {
  directory = dir || '';
}

export function scoped(path) {
  if (!directory) return path;
  return path + (path.includes('?') ? '&' : '?') + 'directory=' + encodeURIComponent(directory);
}

/** JSON request; a non-2xx answer throws ApiError with the server's own message. */
export async function api(method, path, body, unscoped = false) {
  if (!unscoped) path = scoped(path);
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, `the server cannot be reached (${err.message})`);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!response.ok) {
    const message = (data && data.data && data.data.message) || (data && data.message) ||
      (typeof data === 'string' && data) || response.statusText;
    throw new ApiError(response.status, `${response.status}: ${message}`);
  }
  return data;
}

export const get = (path) => api('GET', path);
/** A GET about the server itself, whichever project is shown. */
export const getServer = (path) => api('GET', path, undefined, true);
export const post = (path, body = {}) => api('POST', path, body);
export const patch = (path, body) => api('PATCH', path, body);
export const del = (path) => api('DELETE', path);

/**
 * Follows /event: calls onEvent for every event, onState('live'|'down') on changes. After a drop it
 * reconnects with back-off, and `server.connected` of the new stream is the caller's cue to
 * resynchronise (events in between are not replayed). `restart()` reopens it at once (another
 * project's events).
 */
export function follow(onEvent, onState) {
  let source = null;
  let delay = 250;
  let timer = null;
  const open = () => {
    source = new EventSource(scoped('/event'));
    source.onmessage = (message) => {
      let event;
      try { event = JSON.parse(message.data); } catch { return; }
      if (event.type === 'server.connected') {
        delay = 250;
        onState('live');
      }
      onEvent(event);
    };
    source.onerror = () => {
      source.close();
      onState('down');
      clearTimeout(timer);
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, 4000);
    };
  };
  // A page left for another (or kept in the back-forward cache) must not hold its stream open: a
  // browser allows six connections to one HTTP/1.1 server, and a held one makes later loads wait.
  window.addEventListener('pagehide', () => {
    clearTimeout(timer);
    if (source) source.close();
  });
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) open();
  });
  open();
  return {
    restart() {
      clearTimeout(timer);
      if (source) source.close();
      open();
    },
  };
}

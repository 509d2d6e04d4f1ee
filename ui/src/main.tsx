/**
 * The console: a small single-page app served by the service at /ui. Routes live in the URL's
 * hash (#/tasks, #/tasks/<id>, #/usage, #/replays, #/replays/<id>, #/settings), so a reload keeps the page and nothing but
 * /ui is ever asked of the server for navigation.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, key } from './api.ts';
import { ReplaysPage } from './replays-page.tsx';
import { SettingsPage } from './settings-page.tsx';
import { TaskPage } from './task-page.tsx';
import { TasksPage } from './tasks-page.tsx';
import { UsagePage } from './usage-page.tsx';
import './style.css';

const route = () => location.hash.replace(/^#\/?/, '') || 'tasks';

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    key.set(value.trim());
    try {
      // Any route behind auth tells a good key from a bad one.
      await api('/tasks?limit=1');
      onSignedIn();
    } catch (err) {
      key.clear();
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return (
    <form class="signin" onSubmit={(e) => void submit(e)}>
      <h1>subagentd</h1>
      <label>
        API key
        <input name="key" type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>
      <button type="submit">Sign in</button>
      <p class="hint">The key stays in this tab only (session storage); closing the tab signs out.</p>
      {error && <p class="error">{error}</p>}
    </form>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(key.get() !== null);
  const [path, setPath] = useState(route());
  useEffect(() => {
    const onHash = () => setPath(route());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  if (!signedIn || key.get() === null) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const [section, id] = path.split('/');
  const signOut = () => {
    key.clear();
    setSignedIn(false);
  };
  return (
    <div class="app">
      <nav>
        <strong>subagentd</strong>
        <a href="#/tasks" class={section === 'tasks' ? 'active' : ''}>
          Tasks
        </a>
        <a href="#/usage" class={section === 'usage' ? 'active' : ''}>
          Usage
        </a>
        <a href="#/replays" class={section === 'replays' ? 'active' : ''}>
          Replays
        </a>
        <a href="#/settings" class={section === 'settings' ? 'active' : ''}>
          Budgets &amp; webhooks
        </a>
        <button class="link" onClick={signOut}>
          Sign out
        </button>
      </nav>
      <main>
        {section === 'tasks' && id ? (
          <TaskPage id={decodeURIComponent(id)} />
        ) : section === 'usage' ? (
          <UsagePage />
        ) : section === 'replays' ? (
          <ReplaysPage id={id ? decodeURIComponent(id) : undefined} />
        ) : section === 'settings' ? (
          <SettingsPage />
        ) : (
          <TasksPage />
        )}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);

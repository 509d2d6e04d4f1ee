import { money } from './format.ts';

interface Criterion {
  name: string;
  passed: boolean;
  note: string;
}
interface Outcome {
  status: 'satisfied' | 'failed' | 'max_iterations_reached';
  iterations: number;
  criteria: Criterion[];
  feedback: string | null;
}
interface Candidate {
  taskId: string;
  model: string | null;
  status: string;
  outcome: Outcome | null;
  costMicroUsd: number;
  selected: boolean;
}

const passed = (o: Outcome | null) => (o ? `${o.criteria.filter((c) => c.passed).length} of ${o.criteria.length}` : '—');

/** A task's outcome (`options.outcome`): where its checks of `complete` stand, each criterion with its note. */
export function OutcomeView({ outcome }: { outcome: Outcome }) {
  return (
    <div class="outcome">
      <h3>Outcome</h3>
      <p>
        <span class={`status outcome-${outcome.status}`}>{outcome.status.replace(/_/g, ' ')}</span>{' '}
        <span class="hint iterations">
          after {outcome.iterations} {outcome.iterations === 1 ? 'check' : 'checks'}
        </span>
      </p>
      {outcome.criteria.length > 0 && (
        <table class="criteria">
          <thead>
            <tr>
              <th>Criterion</th>
              <th>Passed</th>
              <th>Note</th>
            </tr>
          </thead>
          <tbody>
            {outcome.criteria.map((c) => (
              <tr data-criterion={c.name}>
                <td>{c.name}</td>
                <td>{c.passed ? 'yes' : 'no'}</td>
                <td class="note">{c.note}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {outcome.feedback && <p class="feedback">{outcome.feedback}</p>}
    </div>
  );
}

/** A task's attempts (`options.candidates`) side by side: model, status, outcome, cost, the one kept. */
export function CandidatesView({ candidates }: { candidates: Candidate[] }) {
  return (
    <div class="candidates">
      <h3>Candidates</h3>
      <table>
        <thead>
          <tr>
            <th>Attempt</th>
            <th>Model</th>
            <th>Status</th>
            <th>Outcome</th>
            <th>Criteria passed</th>
            <th class="num">Cost</th>
            <th>Kept</th>
          </tr>
        </thead>
        <tbody>
          {candidates.map((c) => (
            <tr data-candidate={c.taskId} class={c.selected ? 'selected' : ''}>
              <td>
                <a href={`#/tasks/${encodeURIComponent(c.taskId)}`}>{c.taskId}</a>
              </td>
              <td class="model">{c.model ?? '—'}</td>
              <td>
                <span class={`status ${c.status}`}>{c.status}</span>
              </td>
              <td class="outcome-status">{c.outcome ? c.outcome.status.replace(/_/g, ' ') : '—'}</td>
              <td>{passed(c.outcome)}</td>
              <td class="num">{money(c.costMicroUsd)}</td>
              <td class="kept">{c.selected ? 'selected' : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {candidates.some((c) => c.selected) && <p class="hint">The task's summary, artifacts and changes below are the selected attempt's.</p>}
    </div>
  );
}

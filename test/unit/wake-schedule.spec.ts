import { jest } from '@jest/globals';
import { WakeSchedule } from '../../lib/delay-queue/wake-schedule.js';

// local clock 1_000_000 ms; the server's runs 5 s ahead of it
const LOCAL = 1_000_000;
const SKEW = 5_000;

describe('WakeSchedule', () => {
  let wakes: number[];
  let claiming: boolean;
  let schedule: WakeSchedule;

  beforeEach(() => {
    jest.useFakeTimers({ now: LOCAL });
    wakes = [];
    claiming = false;
    schedule = new WakeSchedule(
      () => wakes.push(Date.now()),
      () => claiming,
      { now: () => Date.now() },
    );
    schedule.synchronize(LOCAL + SKEW);
  });

  afterEach(() => {
    schedule.stop();
    jest.useRealTimers();
  });

  it('wakes at a server time, on the local clock through the measured offset', () => {
    expect(schedule.serverNow()).toBe(LOCAL + SKEW);
    schedule.at(LOCAL + SKEW + 300);
    jest.advanceTimersByTime(299);
    expect(wakes).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(wakes).toEqual([LOCAL + 300]);
  });

  it('a time already past wakes on the next timer turn', () => {
    schedule.at(LOCAL);
    jest.advanceTimersByTime(0);
    expect(wakes).toEqual([LOCAL]);
  });

  it('only ever moves earlier until replanned, and wakes once', () => {
    schedule.at(LOCAL + SKEW + 500);
    schedule.at(LOCAL + SKEW + 900); // later: ignored
    schedule.at(LOCAL + SKEW + 200); // earlier: replaces
    jest.advanceTimersByTime(1_000);
    expect(wakes).toEqual([LOCAL + 200]);
  });

  it('replan replaces a plan even by a later time', () => {
    schedule.at(LOCAL + SKEW + 100);
    schedule.replan(LOCAL + SKEW + 700);
    jest.advanceTimersByTime(1_000);
    expect(wakes).toEqual([LOCAL + 700]);
  });

  it('keeps a hint received while a claim is in flight for its replan, the earlier winning', () => {
    claiming = true;
    schedule.hint(LOCAL + SKEW + 150);
    schedule.hint(LOCAL + SKEW + 400);
    jest.advanceTimersByTime(1_000);
    expect(wakes).toEqual([]); // no timer while claiming: the claim's reply decides
    claiming = false;
    schedule.replan(Date.now() + SKEW + 5_000);
    jest.advanceTimersByTime(150);
    expect(wakes).toEqual([LOCAL + 1_000]); // the hint's time was past: at once
    // the hint is used once: the next replan stands alone
    schedule.replan(Date.now() + SKEW + 300);
    jest.advanceTimersByTime(300);
    expect(wakes).toEqual([LOCAL + 1_000, LOCAL + 1_450]);
  });

  it('a hint received while no claim is in flight plans at once', () => {
    schedule.replan(LOCAL + SKEW + 5_000);
    schedule.hint(LOCAL + SKEW + 50);
    jest.advanceTimersByTime(50);
    expect(wakes).toEqual([LOCAL + 50]);
  });

  it('cancel forgets the plan but not the hints kept for a claim', () => {
    schedule.at(LOCAL + SKEW + 100);
    claiming = true;
    schedule.hint(LOCAL + SKEW + 800);
    schedule.cancel();
    jest.advanceTimersByTime(500);
    expect(wakes).toEqual([]);
    claiming = false;
    schedule.replan(LOCAL + SKEW + 5_000);
    jest.advanceTimersByTime(300);
    expect(wakes).toEqual([LOCAL + 800]);
  });

  it('plans nothing once stopped', () => {
    schedule.at(LOCAL + SKEW + 100);
    schedule.stop();
    schedule.at(LOCAL + SKEW + 50);
    schedule.replan(LOCAL + SKEW + 60);
    jest.advanceTimersByTime(1_000);
    expect(wakes).toEqual([]);
  });

  it('a timer does not hold the process open', () => {
    schedule.at(LOCAL + SKEW + 100);
    expect(jest.getTimerCount()).toBe(1);
    const spy = jest.spyOn(globalThis, 'setTimeout');
    schedule.at(LOCAL + SKEW + 50);
    const timer = spy.mock.results[0]!.value as NodeJS.Timeout;
    spy.mockRestore();
    expect(timer.hasRef()).toBe(false);
  });
});

/**
 * The periodic jobs page's route: the schedules (polled), and for each row its run-now, pause
 * and resume mutations and, once unfolded, its tick history's query; views/SchedulesView.tsx
 * renders them.
 */
import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { scheduleMutations, scheduleTicksOptions, schedulesOptions } from "../api/schedules";
import type { Schedule } from "../api/types";
import { useUser } from "../lib/useUser";
import { ScheduleRowView, SchedulesView } from "../views/SchedulesView";

export function SchedulesPage() {
  const schedules = useQuery(schedulesOptions());
  const user = useUser();
  return (
    <SchedulesView
      schedules={schedules}
      row={(s, now) => <ScheduleRow key={s.name} schedule={s} now={now} canChange={user.can.cancel} />}
    />
  );
}

function ScheduleRow({ schedule: s, now, canChange }: { schedule: Schedule; now: number; canChange: boolean }) {
  const queryClient = useQueryClient();
  const run = useMutation(scheduleMutations.run(queryClient));
  const pause = useMutation(scheduleMutations.pause(queryClient));
  const resume = useMutation(scheduleMutations.resume(queryClient));
  const [open, setOpen] = useState(false);
  const ticks = useQuery({ ...scheduleTicksOptions(s.name), enabled: open });
  const toggle = s.paused ? resume : pause;
  // One outcome at a time: starting an action clears what the others said.
  const error = [run, pause, resume].find((m) => m.isError)?.error ?? null;
  return (
    <ScheduleRowView
      schedule={s}
      now={now}
      canChange={canChange}
      open={open}
      onToggleOpen={() => setOpen(!open)}
      run={{
        mutate: () => {
          pause.reset();
          resume.reset();
          run.mutate(s.name);
        },
        isPending: run.isPending,
        isSuccess: run.isSuccess,
        data: run.data,
        error: run.isError ? error : null,
      }}
      toggle={{
        mutate: () => {
          run.reset();
          (s.paused ? pause : resume).reset();
          toggle.mutate(s.name);
        },
        isPending: toggle.isPending,
        isSuccess: toggle.isSuccess,
        data: toggle.data,
        error: run.isError ? null : error,
      }}
      ticks={open ? ticks : null}
    />
  );
}

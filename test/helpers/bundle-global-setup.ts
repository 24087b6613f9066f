/** Global setup of the `cluster` project: the run's workflow bundle (workflow-bundle.ts). */
export { prepareRunBundle as default } from './workflow-bundle';

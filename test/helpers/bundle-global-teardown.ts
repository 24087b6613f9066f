/** Global teardown of the `cluster` project. */
export { removeRunBundle as default } from './workflow-bundle';

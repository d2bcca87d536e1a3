import { testConfig } from '../../vitest.base.ts';

export default testConfig({
  // The stdio tests spawn the built executable: build it first when the sources are newer.
  globalSetup: ['./vitest.global-setup.ts'],
});

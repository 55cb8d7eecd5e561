/* kjit-main.c: the kjit binary's main.  The command itself (options,
 * output, errors, exit codes) is kjit_cli_main in libkjit (cli.c), which
 * `python3 -m kjit` calls too; this file is linked into the kjit binary
 * only, never into libkjit.
 */

#include "kjit.h"

int main(int argc, char **argv)
{
	return kjit_cli_main(argc, argv);
}

#pragma once
#define LEXER_SPLICED 1

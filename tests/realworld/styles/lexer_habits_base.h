#pragma once
#define LEXER_BASE 2.0f

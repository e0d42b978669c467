// Package api holds baton's HTTP handlers (labstack/echo v4): the request
// and response types of API.md, their validation, and the one table that
// maps the lock engine's errors to RFC 9457 problem+json answers.
//
// Handlers return errors; ErrorHandler renders every one of them, so a
// handler never writes an error body itself:
//
//	e := echo.New()
//	e.HTTPErrorHandler = api.ErrorHandler(logger)
//	api.New(engine, api.Options{}).Register(e)
package api
